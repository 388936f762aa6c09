/* driver/units.c — a kernel unit for every unique group: from the kernel
 * cache when it holds one for the group's key, else built by the built-in
 * policy, compiled with NVRTC and, with a GPU, judged beside the policy's
 * variants (and a unit given with --unit), the fastest verified one kept
 * and stored in the cache (docs/CACHE.md, docs/AGENT.md).
 *
 *   1. look up every slot's key (local store, then the remote) — with
 *      require_cached a miss is an error here, before anything is built;
 *   2. build the rule's unit of each miss;
 *   3. compile them with NVRTC on worker threads;
 *   4. judge the candidates of each miss through o->picker, one group at a
 *      time (the judge's workers own the GPU); a hit is judged again only
 *      with reverify;
 *   5. store each verified winner.
 *
 * Units are stored as a task sees them (inputs numbered as task.json's,
 * which leave out scalar inputs), so a unit verified in one model's compile
 * serves every model with a group of the same key, and a unit an LLM wrote
 * for a task is stored the same way. */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kfuse/compile.h"
#include "kfuse/task.h"
#include "kfuse/plan.h"
#include "units_int.h"

/* Candidates within this factor of the rule's time do not replace it: the
 * rule's unit is what a build without a GPU gets, and timing noise should
 * not make builds differ */
#define KF_PICK_MARGIN 1.02

static void quiet_fn(void *user, kf_diag_level level, const char *msg) {
  (void)user;
  (void)level;
  (void)msg;
}

/* ---- NVRTC on worker threads --------------------------------------------- */

/* Messages of one unit's compile on a worker thread, replayed in program
 * order on the caller's sink: each is a level byte and the text, NUL
 * terminated. */
static void capture_diag(void *user, kf_diag_level level, const char *msg) {
  kf_strbuf *b = user;
  char lv = (char)('0' + (int)level);
  kf_strbuf_append(b, &lv, 1);
  kf_strbuf_append(b, msg, strlen(msg) + 1);
}

static void replay_diag(const kf_strbuf *b, kf_diag *diag) {
  for (size_t at = 0; b->data && at < b->len;) {
    const char *m = b->data + at;
    size_t n = strlen(m + 1);
    kf_diag_report(diag, (kf_diag_level)(m[0] - '0'), "%s", m + 1);
    at += n + 2;
  }
}

/* NVRTC compiles of the unique units, on up to `jobs` threads: compiling
 * is most of a large model's compile time (an unrolled LSTM's 543 units:
 * 81% of 35 s in NVRTC) and every unit compiles on its own. Slots whose
 * unit came from the cache carry their cubin and are skipped. */
typedef struct compile_work {
  kf_uslot *slots;
  int n;
  const kf_target *target;
  kf_strbuf *msgs;
  kf_status *status;
  pthread_mutex_t lock;
  int next, done, todo;
  bool progress;
  double t0;
} compile_work;

static void *compile_worker(void *arg) {
  compile_work *w = arg;
  for (;;) {
    pthread_mutex_lock(&w->lock);
    int s = -1;
    while (w->next < w->n && s < 0) {
      int k = w->next++;
      if (w->slots[k].source == KF_USLOT_BUILT) s = k;
    }
    pthread_mutex_unlock(&w->lock);
    if (s < 0) return NULL;
    kf_diag d;
    kf_diag_init(&d, capture_diag, &w->msgs[s]);
    double t = kf_now_s();
    w->status[s] = kf_unit_compile(w->slots[s].unit, w->target, &d);
    w->slots[s].compile_s = kf_now_s() - t;
    pthread_mutex_lock(&w->lock);
    int done = ++w->done;
    if (w->progress && w->todo >= 64 && (done % 64 == 0 || done == w->todo))
      fprintf(stderr, "kfuse: compiled %d/%d kernel units, %.1f s\n", done, w->todo, kf_now_s() - w->t0);
    pthread_mutex_unlock(&w->lock);
  }
}

/* Threads for the NVRTC compiles: KFUSE_COMPILE_JOBS when set (1 turns the
 * threads off), else the CPUs this process may run on, at most 16. */
static int compile_jobs(void) {
  const char *e = secure_getenv("KFUSE_COMPILE_JOBS");
  if (e && *e) {
    char *end;
    long v = strtol(e, &end, 10);
    if (*end == '\0' && v >= 1 && v <= 256) return (int)v;
  }
  cpu_set_t cs;
  int n = 0;
  if (sched_getaffinity(0, sizeof cs, &cs) == 0) n = CPU_COUNT(&cs);
  if (n < 1) n = 1;
  return n > 16 ? 16 : n;
}

static kf_status compile_units(kf_uslot *slots, int ns, const kf_target *t, bool progress, int *compiled,
                               kf_diag *diag) {
  int todo = 0;
  for (int s = 0; s < ns; s++) todo += slots[s].source == KF_USLOT_BUILT;
  *compiled = todo;
  if (todo == 0) return KF_OK;
  compile_work w = {.slots = slots, .n = ns, .target = t, .progress = progress, .t0 = kf_now_s(), .todo = todo};
  w.msgs = calloc((size_t)ns, sizeof *w.msgs);
  w.status = calloc((size_t)ns, sizeof *w.status);
  if (!w.msgs || !w.status) {
    free(w.msgs);
    free(w.status);
    return KF_ERR_NOMEM;
  }
  for (int s = 0; s < ns; s++) kf_strbuf_init(&w.msgs[s]);
  pthread_mutex_init(&w.lock, NULL);
  int jobs = compile_jobs();
  if (jobs > todo) jobs = todo;
  pthread_t tid[256];
  int started = 0;
  for (int j = 1; j < jobs; j++) {
    if (pthread_create(&tid[started], NULL, compile_worker, &w) != 0) break; /* fewer threads, same work */
    started++;
  }
  compile_worker(&w);
  for (int j = 0; j < started; j++) pthread_join(tid[j], NULL);
  pthread_mutex_destroy(&w.lock);
  /* messages and the first failure in program order, as a serial compile
   * would have given them */
  kf_status st = KF_OK;
  for (int s = 0; s < ns && !st; s++) {
    replay_diag(&w.msgs[s], diag);
    st = w.status[s];
  }
  for (int s = 0; s < ns; s++) kf_strbuf_fini(&w.msgs[s]);
  free(w.msgs);
  free(w.status);
  return st;
}

/* ---- the kernel cache ---------------------------------------------------- */

/* Why the cache is not used for o ("" when it is) */
static void cache_off_why(const kf_compile_options *o, char *why, size_t n) {
  why[0] = '\0';
  if (!o->cache)
    snprintf(why, n, "no kernel cache (--no-cache)");
  else if (o->reference)
    snprintf(why, n, "the fp64 reference is not cached");
  else if (o->no_cudnn || o->block_size || o->vector_width || o->row_threads || o->row_cache ||
           o->row_occupancy || o->col_threads || o->col_block || o->row_unroll || o->tile_a || o->tile_t ||
           o->row_split || o->attn_scratch_kib)
    snprintf(why, n, "--kernel-option and --no-cudnn change the code a group gets, which its key does not say");
}

static kf_status slot_key(const kf_uslot *sl, const kf_compile_options *o, const char *toolkit, char out[65],
                          kf_diag *diag) {
  kf_cache_key_fields f;
  kf_cache_key_fields_init(&f);
  char arch[16];
  snprintf(arch, sizeof arch, "sm_%d%s", o->target.sm, o->target.arch_specific ? "a" : "");
  f.canonical = sl->first->canonical;
  f.precision = kf_precision_name(o->precision);
  f.arch = arch;
  f.toolkit = toolkit;
  f.driver = "";
  kf_cache_key k;
  kf_status st = kf_cache_key_make(&f, &k, diag);
  if (!st) memcpy(out, k.hex, 65);
  return st;
}

/* A cached entry as the slot's unit: read, its cubin taken, its inputs
 * numbered as the group's. KF_ERR_FORMAT (with why) when the entry does
 * not hold a unit for this group. */
static kf_status unit_of_entry(const kf_uslot *sl, const kf_cache_entry *e, kf_unit **out, char *why, size_t n) {
  kf_diag quiet;
  kf_diag_init(&quiet, quiet_fn, NULL);
  kf_unit *u = NULL;
  kf_status st = kf_unit_from_json(e->unit_json, "unit.json", e->unit_cu, &u, &quiet);
  if (st) {
    snprintf(why, n, "its unit.json does not read back");
    return st == KF_ERR_NOMEM ? st : KF_ERR_FORMAT;
  }
  if (u->source && (!e->cubin || !e->cubin_bytes)) {
    snprintf(why, n, "it has a source but no cubin");
    st = KF_ERR_FORMAT;
  }
  if (!st && e->cubin && e->cubin_bytes) {
    u->cubin = malloc(e->cubin_bytes);
    if (!u->cubin) st = KF_ERR_NOMEM;
    else {
      memcpy(u->cubin, e->cubin, e->cubin_bytes);
      u->cubin_bytes = e->cubin_bytes;
    }
  }
  if (!st && kf_task_unit_inputs_to_group(sl->first, u, why, n)) st = KF_ERR_FORMAT;
  if (st) {
    kf_unit_destroy(u);
    return st;
  }
  *out = u;
  return KF_OK;
}

/* The verdict a compile's picker gave the chosen candidate, as the entry
 * keeps it (format kfuse-pick-verdict-v1, docs/CACHE.md) */
static char *pick_verdict(const kf_uslot *sl) {
  const kf_pick_cand *c = &sl->cands[sl->chosen];
  cJSON *v = cJSON_CreateObject();
  if (!v) return NULL;
  cJSON_AddStringToObject(v, "format", "kfuse-pick-verdict-v1");
  cJSON_AddStringToObject(v, "candidate", c->label);
  cJSON_AddBoolToObject(v, "correct", c->correct);
  cJSON_AddNumberToObject(v, "reward", c->reward);
  cJSON_AddNumberToObject(v, "ms", c->ms);
  cJSON_AddStringToObject(v, "device", sl->info.device);
  cJSON_AddNumberToObject(v, "floor_ms", sl->info.floor_ms);
  cJSON *ca = cJSON_AddArrayToObject(v, "candidates");
  for (int k = 0; ca && k < sl->n_cands; k++) {
    const kf_pick_cand *x = &sl->cands[k];
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "candidate", x->label);
    cJSON_AddBoolToObject(e, "correct", x->correct);
    cJSON_AddNumberToObject(e, "reward", x->reward);
    if (x->ms > 0) cJSON_AddNumberToObject(e, "ms", x->ms);
    if (!x->correct) cJSON_AddStringToObject(e, "why", x->why);
    cJSON_AddItemToArray(ca, e);
  }
  char *text = cJSON_PrintUnformatted(v);
  cJSON_Delete(v);
  return text;
}

/* The slot's chosen unit, verified by this compile's picker, into the
 * cache. A failure to store is a warning: the module is still right. */
static void store_slot(kf_uslot *sl, const kf_compile_options *o, const char *toolkit, kf_units_state *us,
                       kf_diag *diag) {
  const kf_pick_cand *c = &sl->cands[sl->chosen];
  if (!c->correct || c->reward < 1) return;
  kf_unit *u = NULL;
  char why[256] = "";
  kf_strbuf js;
  kf_strbuf_init(&js);
  char *verdict = NULL;
  kf_status st = kf_unit_clone(sl->unit, &u);
  if (!st && kf_task_unit_inputs(sl->first, u, why, sizeof why)) st = KF_ERR_UNSUPPORTED;
  kf_diag quiet;
  kf_diag_init(&quiet, quiet_fn, NULL);
  if (!st) st = kf_unit_to_json(u, "unit.cu", &js, &quiet);
  if (!st && !(verdict = pick_verdict(sl))) st = KF_ERR_NOMEM;
  if (!st) {
    char arch[16], policy[160], endpoint[512] = "";
    snprintf(arch, sizeof arch, "sm_%d%s", o->target.sm, o->target.arch_specific ? "a" : "");
    /* a built-in unit by the choice that won; another policy's by its own name */
    if (u->policy && strncmp(u->policy, "builtin", 7) != 0) {
      snprintf(policy, sizeof policy, "%s", u->policy);
      if (o->llm_endpoint && strncmp(u->policy, "llm:", 4) == 0)
        kf_cache_endpoint_name(o->llm_endpoint, endpoint, sizeof endpoint);
    } else
      snprintf(policy, sizeof policy, "builtin:%s", c->label);
    kf_cache_entry e;
    memset(&e, 0, sizeof e);
    memcpy(e.key, sl->cache_key, sizeof e.key);
    e.canonical = sl->first->canonical;
    e.precision = (char *)kf_precision_name(o->precision);
    e.arch = arch;
    e.toolkit = (char *)toolkit;
    e.driver = "";
    e.codegen = KF_CACHE_CODEGEN_VERSION;
    e.unit_json = js.data;
    e.unit_cu = u->source;
    e.cubin = u->cubin;
    e.cubin_bytes = u->cubin_bytes;
    e.verdict = verdict;
    e.reward = c->reward;
    e.ms = c->ms;
    e.gpu = sl->info.device;
    e.policy = policy;
    e.endpoint = endpoint;
    kf_cache_put_result res;
    st = kf_cache_store(o->cache, o->remote, &e, &res, diag);
    if (!st) {
      sl->stored = res != KF_CACHE_PUT_KEPT;
      us->stored += sl->stored;
    }
  }
  if (st == KF_ERR_UNSUPPORTED)
    kf_diag_warn(diag, "group %d: its unit is not cached: %s", sl->first->id, why);
  else if (st)
    kf_diag_warn(diag, "group %d: its verified unit could not be stored in the kernel cache (%s)", sl->first->id,
                 kf_status_str(st));
  free(verdict);
  kf_strbuf_fini(&js);
  kf_unit_destroy(u);
}

/* ---- judging ------------------------------------------------------------- */

/* The unit in dir, written for grp's task, as a compiled candidate for
 * grp (inputs renumbered); errors name the directory */
static kf_status given_unit(const kf_group *grp, const char *dir, const kf_target *tg, kf_unit **out,
                            kf_diag *diag) {
  kf_unit *u = NULL;
  kf_status st = kf_unit_read_dir(dir, &u, diag);
  char why[256] = "";
  if (!st && (st = kf_task_unit_inputs_to_group(grp, u, why, sizeof why)))
    kf_diag_error(diag, "%s: not a unit for group %d's task: %s", dir, grp->id, why);
  /* NVRTC in this process: a unit given on the command line is the user's
   * own code (the judge's compile worker isolates an agent's) */
  if (!st) st = kf_unit_compile(u, tg, diag);
  if (st) {
    kf_unit_destroy(u);
    return st;
  }
  *out = u;
  return KF_OK;
}

/* Group sl->first's candidates (the rule's unit, a unit given for it with
 * --unit, and the built-in policy's variants of it) judged by o->picker;
 * the fastest verified one becomes sl->unit, or the given unit when it is
 * verified. Errors: no memory, and a given unit that cannot be read,
 * compiled or verified; a group that merely cannot be judged keeps its
 * rule's unit and the report says why. */
static kf_status pick_group(const kf_compile_options *o, const kf_builtin_options *bo, bool all_groups,
                            bool over_budget, kf_uslot *sl, kf_units_state *us, kf_diag *diag) {
  const kf_group *grp = sl->first;
  const char *given_dir = sl->given_dir;
  kf_builtin_variant v[KF_BUILTIN_MAX_VARIANTS];
  int nv = kf_builtin_variants(grp, bo, v);
  if (nv == 0 && !all_groups && !given_dir) return KF_OK;
  if (over_budget && !given_dir) {
    /* a given unit is always judged: it is never shipped unverified */
    us->over_budget++;
    snprintf(sl->info.why, sizeof sl->info.why,
             "the compile's judging time (%g s, --judge-seconds) was spent on groups moving more bytes; the "
             "rule's unit is used", o->judge_seconds);
    return KF_OK;
  }
  kf_pick_cand *c = calloc(KF_MAX_CANDS + 1, sizeof *c);
  if (!c) return KF_ERR_NOMEM;
  snprintf(c[0].label, sizeof c[0].label, "rule");
  c[0].unit = sl->unit;
  int n = 1, given = -1;
  if (given_dir) {
    kf_status gs = given_unit(grp, given_dir, &o->target, &c[1].unit, diag);
    if (gs) {
      free(c);
      return gs;
    }
    snprintf(c[1].label, sizeof c[1].label, "given");
    given = n++;
  }
  kf_diag quiet;
  kf_diag_init(&quiet, quiet_fn, NULL);
  for (int k = 0; k < nv; k++) {
    kf_unit *u = NULL;
    kf_status bs = kf_builtin_unit(sl->p, grp, &v[k].opt, &u, &quiet);
    for (int j = 0; !bs && j < n; j++)
      if (kf_unit_same(u, c[j].unit)) bs = KF_ERR_UNSUPPORTED; /* a choice that changes nothing here */
    if (!bs) bs = kf_unit_compile(u, &o->target, &quiet);
    if (bs) {
      kf_unit_destroy(u);
      if (bs == KF_ERR_NOMEM) {
        free(c);
        return bs;
      }
      continue;
    }
    _Static_assert(sizeof c[n].label == sizeof v[k].label, "labels");
    memcpy(c[n].label, v[k].label, sizeof c[n].label);
    c[n].label[sizeof c[n].label - 1] = '\0';
    c[n++].unit = u;
  }
  if (n == 1 && !all_groups && given < 0) {
    free(c);
    return KF_OK;
  }
  double t0 = kf_now_s();
  kf_status st = o->picker->judge(o->picker->user, sl->g, sl->p, grp, o, c, n, &sl->info, diag);
  sl->pick_s = kf_now_s() - t0;
  int best = 0;
  if (!st && sl->info.judged) {
    best = -1;
    for (int k = 0; k < n; k++)
      if (c[k].correct && (best < 0 || c[k].ms < c[best].ms)) best = k;
    if (best > 0 && c[0].correct && c[best].ms * KF_PICK_MARGIN > c[0].ms) best = 0;
    us->judged++;
    if (best >= 0) us->verified++;
    if (best > 0) us->replaced++;
    if (best < 0)
      kf_diag_warn(diag, "group %d (%s): no candidate was verified on the GPU (the rule's: %s); its rule's unit "
                   "is kept, unverified", grp->id, kf_group_kind_name(grp->kind), c[0].why);
    else if (!c[0].correct && c[0].judged)
      kf_diag_warn(diag, "group %d (%s): the rule's unit failed verification on the GPU (%s); the verified "
                   "candidate %s is used instead", grp->id, kf_group_kind_name(grp->kind), c[0].why,
                   c[best].label);
    if (given >= 0) {
      if (!c[given].correct && sl->given_optional) {
        kf_diag_warn(diag, "group %d: the unit in %s failed the judge: %s; the built-in one is kept", grp->id,
                     given_dir, c[given].why);
      } else if (!c[given].correct) {
        kf_diag_error(diag, "group %d: the unit in %s failed the judge: %s", grp->id, given_dir, c[given].why);
        st = KF_ERR_INVALID;
      } else {
        best = given; /* asked for, and verified */
      }
    }
    if (best < 0) best = 0;
    if (o->progress && c[best].correct)
      fprintf(stderr, "kfuse: group %d judged: %s %.4f ms (rule's %.4f ms), %d candidate%s, %.2f s\n", grp->id,
              c[best].label, c[best].ms, c[0].ms, n, n == 1 ? "" : "s", sl->pick_s);
  } else if (!st && given >= 0 && sl->given_optional) {
    kf_diag_warn(diag, "group %d: the unit in %s cannot be verified here (%s); not stored", grp->id, given_dir,
                 sl->info.why);
  } else if (!st && given >= 0) {
    kf_diag_error(diag, "group %d: the unit in %s cannot be verified here, and kfuse never ships an unverified "
                  "given unit: %s", grp->id, given_dir, sl->info.why);
    st = KF_ERR_UNSUPPORTED;
  } else if (!st) {
    if (sl->info.no_gpu) {
      us->on = false;
      snprintf(us->why, sizeof us->why, "%s", sl->info.why);
      if (o->progress) fprintf(stderr, "kfuse: choices by rule, nothing judged (%s)\n", sl->info.why);
    } else if (o->progress) {
      fprintf(stderr, "kfuse: group %d not judged: %s\n", grp->id, sl->info.why);
    }
  }
  for (int k = 0; k < n; k++) {
    if (k == best) continue;
    if (c[k].unit != sl->unit) kf_unit_destroy(c[k].unit);
    c[k].unit = NULL;
  }
  if (c[best].unit != sl->unit) {
    kf_unit_destroy(sl->unit);
    sl->unit = c[best].unit;
  }
  c[best].unit = NULL; /* owned by the slot */
  sl->cands = c;
  sl->n_cands = n;
  sl->chosen = best;
  return st;
}

/* Slots in the order they are judged: most bytes first, then program order */
typedef struct by_bytes {
  int64_t bytes;
  int slot;
} by_bytes;

static int most_bytes_first(const void *a, const void *b) {
  const by_bytes *x = a, *y = b;
  if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
  return (x->slot > y->slot) - (x->slot < y->slot);
}

/* --reverify: a cached unit judged alone. true when it verified; false
 * (with the slot back to a miss, its unit freed and the entry removed from
 * the local store) when the judge found it wrong; an error when it could
 * not be judged at all, since the user asked for exactly that. */
static kf_status reverify_slot(kf_uslot *sl, const kf_compile_options *o, kf_units_state *us, bool *ok,
                               kf_diag *diag) {
  kf_pick_cand c;
  memset(&c, 0, sizeof c);
  snprintf(c.label, sizeof c.label, "cached");
  c.unit = sl->unit;
  double t0 = kf_now_s();
  kf_status st = o->picker->judge(o->picker->user, sl->g, sl->p, sl->first, o, &c, 1, &sl->info, diag);
  sl->pick_s = kf_now_s() - t0;
  if (st) return st;
  if (!sl->info.judged) {
    kf_diag_error(diag, "group %d: --reverify: its cached unit cannot be judged here: %s", sl->first->id,
                  sl->info.why);
    return KF_ERR_UNSUPPORTED;
  }
  us->judged++;
  sl->reverified = true;
  *ok = c.correct;
  if (c.correct) {
    us->verified++;
    if (o->progress)
      fprintf(stderr, "kfuse: group %d: cached unit verified again: %.4f ms (%.4f ms when cached on %s)\n",
              sl->first->id, c.ms, sl->cached_ms, sl->cached_gpu);
    return KF_OK;
  }
  kf_diag_warn(diag, "group %d: its cached unit (key %.16s...) failed the judge again (%s); it is dropped from the "
               "cache and the group built anew", sl->first->id, sl->cache_key, c.why);
  kf_status rs = kf_cache_remove(o->cache, sl->cache_key, diag);
  if (rs) kf_diag_warn(diag, "group %d: the failed entry could not be removed (%s)", sl->first->id,
                       kf_status_str(rs));
  kf_unit_destroy(sl->unit);
  sl->unit = NULL;
  sl->source = KF_USLOT_BUILT;
  sl->reverified = false;
  memset(&sl->info, 0, sizeof sl->info);
  return KF_OK;
}

/* ---- the slots ----------------------------------------------------------- */

static void group_line(const kf_group *grp, char *out, size_t n) {
  size_t at = (size_t)snprintf(out, n, "group %d (%s:", grp->id, kf_group_kind_name(grp->kind));
  for (int k = 0; k < grp->n_ops && k < 6 && at < n; k++)
    at += (size_t)snprintf(out + at, n - at, " %s", kf_opcode_name(grp->ops[k]->code));
  if (at < n) snprintf(out + at, n - at, "%s)", grp->n_ops > 6 ? " ..." : "");
}

kf_status kf_units_build(kf_uslot *slots, int ns, const kf_compile_options *o, kf_units_state *us,
                         kf_diag *diag) {
  kf_builtin_options bo;
  kf_compile_builtin_options(o, &bo);
  kf_status st = KF_OK;
  char toolkit[64];
  kf_nvrtc_toolkit(toolkit, sizeof toolkit);

  /* 1. the cache */
  cache_off_why(o, us->cache_why, sizeof us->cache_why);
  us->cache_on = !us->cache_why[0];
  if (o->require_cached && !us->cache_on) {
    kf_diag_error(diag, "--require-cached: %s", us->cache_why);
    return KF_ERR_ARG;
  }
  if (us->cache_on) {
    int missing = 0;
    for (int s = 0; s < ns && !st; s++) {
      kf_uslot *sl = &slots[s];
      if ((st = slot_key(sl, o, toolkit, sl->cache_key, diag))) break;
      if (sl->given_dir) continue; /* the user's unit, judged */
      kf_cache_entry *e = NULL;
      int from = KF_CACHE_MISS;
      if ((st = kf_cache_fetch(o->cache, o->remote, sl->cache_key, &e, &from, diag))) break;
      if (e) {
        char why[256] = "";
        kf_status es = unit_of_entry(sl, e, &sl->unit, why, sizeof why);
        if (es == KF_ERR_NOMEM) st = es;
        else if (es)
          kf_diag_warn(diag, "group %d: the kernel cache's entry %.16s... is not usable here (%s); treated as a "
                       "miss", sl->first->id, sl->cache_key, why);
        else {
          sl->source = from == KF_CACHE_REMOTE ? KF_USLOT_REMOTE : KF_USLOT_LOCAL;
          sl->cached_reward = e->reward;
          sl->cached_ms = e->ms;
          snprintf(sl->cached_gpu, sizeof sl->cached_gpu, "%s", e->gpu ? e->gpu : "");
          snprintf(sl->cached_policy, sizeof sl->cached_policy, "%s", e->policy ? e->policy : "");
        }
        kf_cache_entry_destroy(e);
      }
      if (sl->source == KF_USLOT_LOCAL) us->hits_local++;
      else if (sl->source == KF_USLOT_REMOTE) us->hits_remote++;
      else us->misses++;
      if (o->require_cached && sl->source == KF_USLOT_BUILT) {
        char line[200];
        group_line(sl->first, line, sizeof line);
        kf_diag_error(diag, "--require-cached: %s misses the kernel cache (key %s)", line, sl->cache_key);
        missing++;
      }
    }
    if (!st && missing) {
      kf_diag_error(diag, "--require-cached: %d of %d unique group%s not in the kernel cache at %s; warm it "
                    "with kfuse warm on a GPU (docs/CACHE.md)", missing, ns, ns == 1 ? " is" : "s are",
                    kf_cache_dir(o->cache));
      st = KF_ERR_LIMIT;
    }
    if (st) return st;
  }

  /* 3. on a GPU, a hit is judged again (--reverify) before anything is
   * built, so one that fails is built like any miss */
  us->on = o->picker && !o->no_tune && !o->reference;
  if (o->no_tune) snprintf(us->why, sizeof us->why, "--no-judge");
  else if (o->reference) snprintf(us->why, sizeof us->why, "the fp64 reference is not judged");
  else if (!o->picker) snprintf(us->why, sizeof us->why, "no judge in this build of the compile path");
  else snprintf(us->why, sizeof us->why, "no group has choices worth judging");
  if (o->reverify) {
    if (!us->on) {
      kf_diag_error(diag, "--reverify: cached units are judged again on a GPU, and nothing is judged here (%s)",
                    us->why);
      return KF_ERR_ARG;
    }
    for (int s = 0; s < ns && !st; s++) {
      kf_uslot_source was = slots[s].source;
      if (was == KF_USLOT_BUILT) continue;
      bool ok = false;
      st = reverify_slot(&slots[s], o, us, &ok, diag);
      if (!st && !ok) {
        if (was == KF_USLOT_REMOTE) us->hits_remote--;
        else us->hits_local--;
        us->misses++;
      }
    }
    if (st) return st;
  }

  /* 2. the rule's unit of every miss */
  for (int s = 0; s < ns && !st; s++) {
    kf_uslot *sl = &slots[s];
    if (sl->source != KF_USLOT_BUILT) continue;
    double t0 = kf_now_s();
    st = kf_builtin_unit(sl->p, sl->first, &bo, &sl->unit, diag);
    sl->build_s = kf_now_s() - t0;
  }
  /* their kernels compiled, in parallel */
  if (!st) st = compile_units(slots, ns, &o->target, o->progress, &us->compiled, diag);
  if (st) return st;

  /* 4. the candidates of each miss judged, one group at a time (the
   * judge's workers own the GPU while they run), those moving the most
   * bytes first; once o->judge_seconds of judging are spent the others
   * keep the rule's unit */
  bool all = o->picker && o->picker->all_groups;
  by_bytes *order = malloc(((size_t)ns + 1) * sizeof *order);
  if (!order) return KF_ERR_NOMEM;
  for (int s = 0; s < ns; s++) order[s] = (by_bytes){kf_group_io_bytes(slots[s].first), s};
  if (o->judge_seconds > 0) qsort(order, (size_t)ns, sizeof *order, most_bytes_first);
  double judging_s = 0;
  bool said_budget = false;
  for (int q = 0; q < ns && !st; q++) {
    kf_uslot *sl = &slots[order[q].slot];
    bool over = o->judge_seconds > 0 && judging_s >= o->judge_seconds;
    if (sl->source == KF_USLOT_BUILT && (us->on || sl->given_dir)) {
      int before = us->over_budget;
      st = pick_group(o, &bo, all, over, sl, us, diag);
      judging_s += sl->pick_s;
      if (o->progress && us->over_budget > before && !said_budget) {
        fprintf(stderr, "kfuse: %.1f s of judging spent (--judge-seconds %g): the remaining groups with choices "
                        "take the rule's unit\n", judging_s, o->judge_seconds);
        said_budget = true;
      }
    }
    /* 5. the verified winner stored */
    if (!st && us->cache_on && sl->source == KF_USLOT_BUILT && sl->n_cands && sl->info.judged)
      store_slot(sl, o, toolkit, us, diag);
    if (o->progress && sl->source != KF_USLOT_BUILT)
      fprintf(stderr, "kfuse: [%d/%d] group %d (%s, %d ops): %s from the cache (reward %d, %.4f ms on %s)%s\n",
              q + 1, ns, sl->first->id, kf_group_kind_name(sl->first->kind), sl->first->n_ops,
              sl->unit->name ? sl->unit->name : "?", sl->cached_reward, sl->cached_ms, sl->cached_gpu,
              sl->reverified ? ", verified again" : "");
    else if (o->progress)
      fprintf(stderr, "kfuse: [%d/%d] group %d (%s, %d ops): %s, %.2f s%s\n", q + 1, ns, sl->first->id,
              kf_group_kind_name(sl->first->kind), sl->first->n_ops, sl->unit->name ? sl->unit->name : "?",
              sl->build_s + sl->compile_s + sl->pick_s, sl->stored ? ", stored in the cache" : "");
  }
  free(order);
  return st;
}

void kf_units_free(kf_uslot *slots, int ns) {
  for (int s = 0; slots && s < ns; s++) {
    kf_unit_destroy(slots[s].unit);
    slots[s].unit = NULL;
    free(slots[s].cands);
    slots[s].cands = NULL;
  }
}

/* ---- kfuse warm ---------------------------------------------------------- */

typedef struct warm_group {
  const kf_graph *g;
  const kf_partition *p;
  const kf_group *grp;
  char key[65]; /* the cache key: what makes groups the same across models */
} warm_group;

static int by_key(const void *a, const void *b) {
  return strcmp(((const warm_group *)a)->key, ((const warm_group *)b)->key);
}

kf_status kf_compile_warm(kf_graph *const *graphs, int n, const kf_compile_options *o, int shard, int n_shards,
                          kf_warm_counts *out, kf_diag *diag) {
  memset(out, 0, sizeof *out);
  if (n_shards < 1 || shard < 0 || shard >= n_shards) {
    kf_diag_error(diag, "warm: shard %d of %d: shards are numbered 1 to N", shard + 1, n_shards);
    return KF_ERR_ARG;
  }
  char why[256];
  cache_off_why(o, why, sizeof why);
  if (why[0]) {
    kf_diag_error(diag, "warm: %s", why);
    return KF_ERR_ARG;
  }
  kf_partition **parts = calloc((size_t)n + 1, sizeof *parts);
  warm_group *wg = NULL;
  kf_uslot *slots = NULL;
  int nw = 0, cap = 0, ns = 0;
  kf_status st = parts ? KF_OK : KF_ERR_NOMEM;
  char toolkit[64];
  kf_nvrtc_toolkit(toolkit, sizeof toolkit);
  /* every model's unique groups, by cache key */
  for (int m = 0; m < n && !st; m++) {
    st = kf_compile_passes(graphs[m], o, diag);
    if (!st) st = kf_compile_partition(graphs[m], o, &parts[m], diag);
    for (int i = 0; !st && i < parts[m]->n_groups; i++) {
      const kf_group *grp = &parts[m]->groups[i];
      if (grp->kind == KF_GROUP_VIEW) continue;
      kf_uslot probe = {.first = grp};
      char key[65];
      if ((st = slot_key(&probe, o, toolkit, key, diag))) break;
      bool seen = false;
      for (int k = 0; k < nw && !seen; k++) seen = strcmp(wg[k].key, key) == 0;
      if (seen) continue;
      if (nw == cap) {
        int nc = cap ? cap * 2 : 64;
        warm_group *x = realloc(wg, (size_t)nc * sizeof *x);
        if (!x) {
          st = KF_ERR_NOMEM;
          break;
        }
        wg = x;
        cap = nc;
      }
      wg[nw] = (warm_group){.g = graphs[m], .p = parts[m], .grp = grp};
      memcpy(wg[nw++].key, key, 65);
    }
  }
  if (st) goto done;
  /* the same split on every job of a CI matrix: the keys' order decides */
  if (nw) qsort(wg, (size_t)nw, sizeof *wg, by_key);
  out->unique_groups = nw;
  slots = calloc((size_t)nw + 1, sizeof *slots);
  if (!slots) {
    st = KF_ERR_NOMEM;
    goto done;
  }
  for (int k = shard; k < nw; k += n_shards)
    slots[ns++] = (kf_uslot){.g = wg[k].g, .p = wg[k].p, .first = wg[k].grp};
  out->in_shard = ns;
  for (int k = 0; k < o->n_given; k++)
    for (int s = 0; s < ns; s++)
      if (strcmp(slots[s].first->key_hex, o->given_keys[k]) == 0) {
        slots[s].given_dir = o->given_dirs[k];
        slots[s].given_optional = true;
      }
  if (o->progress)
    fprintf(stderr, "kfuse: warm: %d model%s, %d unique groups, %d in shard %d/%d\n", n, n == 1 ? "" : "s", nw, ns,
            shard + 1, n_shards);
  kf_compile_options wo = *o;
  wo.judge_seconds = 0; /* warming judges every group, however long it takes */
  kf_picker all;
  if (o->picker) {
    all = *o->picker;
    all.all_groups = true; /* every group's unit verified, so every one is cached */
    wo.picker = &all;
  }
  kf_units_state us;
  memset(&us, 0, sizeof us);
  st = kf_units_build(slots, ns, &wo, &us, diag);
  if (st) goto done;
  out->hits = us.hits_local + us.hits_remote;
  out->judged = us.judged;
  out->stored = us.stored;
  out->missed = calloc((size_t)ns + 1, sizeof *out->missed);
  if (!out->missed) {
    st = KF_ERR_NOMEM;
    goto done;
  }
  for (int s = 0; s < ns; s++) {
    const kf_uslot *sl = &slots[s];
    if (sl->source != KF_USLOT_BUILT) continue;
    if (!sl->given_dir) memcpy(out->missed[out->n_missed++], sl->first->key_hex, 65);
    if (!sl->info.judged) out->not_judged++;
    else if (!sl->cands[sl->chosen].correct) out->failed++;
  }
  if (out->not_judged && !us.on)
    kf_diag_warn(diag, "warm: %d group%s not judged, so not cached: %s", out->not_judged,
                 out->not_judged == 1 ? "" : "s", us.why);
done:
  kf_units_free(slots, ns);
  free(slots);
  free(wg);
  for (int m = 0; parts && m < n; m++) kf_partition_destroy(parts[m]);
  free(parts);
  return st;
}
