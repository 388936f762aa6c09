/* driver/compile_agent.c — `kfuse compile --agent llm` (and kfuse warm's): before the compile,
 * LLM agent sessions (include/kfuse/agent_loop.h) on the model's groups,
 * whose verified units go in as --unit does (the compile's judge verifies
 * each again in place; the built-in unit stays wherever none is verified).
 *
 * 1. The groups are written as tasks (kf_task_write) under AGENT_DIR/tasks;
 *    a key repeated in the model (a repeated block) is one candidate with
 *    its copies counted. Only groups with a built-in unit (the fallback)
 *    are candidates.
 * 2. Ordering, so the budget goes where the model's time is. Measured: each
 *    candidate's built-in unit is timed through the judge (queued onto the
 *    GPUs) and scored share x distance, share = copies x ms over the sum of
 *    copies x ms over the model, distance = 1 - its fraction of the floor;
 *    a group already at --agent-target gets no session. Static, where
 *    nothing can be timed (no GPU, --no-judge, a built-in unit that fails):
 *    copies x the floor's time on an H100 (kf_task_floor_estimate_ms).
 *    agent.json says which ordering was used and why.
 * 3. The first --agent-groups of them get a session each, in
 *    AGENT_DIR/group_<id>, --agent-jobs at once on threads; every judge
 *    call of every session waits in one queue for a GPU (kf_judge_queue).
 *    Per-model budgets (tokens over all sessions, wall time of the whole
 *    phase) are checked before every turn of every session: once spent,
 *    sessions in flight stop at their next turn and no new one starts.
 * 4. AGENT_DIR/agent.json lists the ordering and the sessions; after the
 *    compile kf_compile_agent_report adds them to the compile's report with
 *    whether each verified unit replaced the built-in one. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "kfuse/compile_agent.h"
#include "kfuse/curl.h"
#include "kfuse/frontend.h"
#include "kfuse/task.h"

/* What a session may not start, or stop, for */
enum { NOT_CHOSEN = 0, RUN, SKIP_TARGET, SKIP_BUDGET, SKIP_ERROR };

typedef struct cand {
  int group, copies;
  char key[65];
  char dir[8192];
  char builtin[8400];  /* its built-in unit's directory */
  double est_ms;       /* the static floor estimate */
  double ms, fraction; /* the built-in unit's, measured; -1: not */
  double score;
  char time_why[256];  /* why it could not be timed */
  /* the session */
  int state;
  char out[4200];
  char why[192];       /* SKIP_*: why no session */
  kf_status st;
  kf_agent_result r;
  int64_t tokens;      /* live, for the model's budget */
} cand;

typedef struct shared {
  pthread_mutex_t mu;
  cand *c;
  int n, next;
  int runs; /* sessions chosen */
  const kf_compile_agent_options *ca;
  const kf_agent_options *ao;
  const kf_compile_options *co;
  kf_judge_queue *q;
  kf_judge_binding jb; /* the sessions' judge: ca->judge on the queue */
  double t0;
  bool spent; /* a per-model budget is spent: no new session */
  char spent_why[160];
  kf_diag *diag; /* the caller's, under mu */
  kf_status fatal;
} shared;

static cJSON *read_json(const char *path, kf_diag *diag) {
  char *t = NULL;
  if (kf_read_text(path, 64L << 20, &t, diag) != KF_OK) return NULL;
  cJSON *j = cJSON_Parse(t);
  free(t);
  if (!j) kf_diag_error(diag, "%s: not JSON", path);
  return j;
}

static int by_score(const void *a, const void *b) {
  const cand *x = a, *y = b;
  return x->score < y->score ? 1 : x->score > y->score ? -1 : x->group - y->group;
}

/* The GPUs judge calls are queued onto by default: CUDA_VISIBLE_DEVICES's
 * entries where it is set, else the driver's device nodes (/dev/nvidiaN);
 * at least one. Nothing is asked of CUDA in this process: the judge's
 * workers are its only CUDA users. */
static int visible_gpus(void) {
  const char *v = secure_getenv("CUDA_VISIBLE_DEVICES");
  int n = 0;
  if (v) {
    for (const char *p = v; *p; p++)
      if (*p != ',' && (p == v || p[-1] == ',')) n++;
    return n > 0 ? n : 1;
  }
  DIR *d = opendir("/dev");
  if (!d) return 1;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strncmp(e->d_name, "nvidia", 6) == 0 && e->d_name[6] && strspn(e->d_name + 6, "0123456789") ==
                                                                        strlen(e->d_name + 6))
      n++;
  closedir(d);
  return n > 0 ? n : 1;
}

/* ---- threads ---------------------------------------------------------------------- */

/* fn(sh) on the calling thread and jobs - 1 more; fewer when threads
 * cannot be started (a warning says so). */
static void run_threads(shared *sh, int jobs, void *(*fn)(void *)) {
  pthread_t *t = jobs > 1 ? calloc((size_t)jobs - 1, sizeof *t) : NULL;
  int started = 0;
  for (int i = 0; t && i < jobs - 1; i++) {
    int e = pthread_create(&t[i], NULL, fn, sh);
    if (e != 0) {
      pthread_mutex_lock(&sh->mu);
      kf_diag_warn(sh->diag, "agent: %d of %d threads started (pthread_create: %s)", started + 1, jobs,
                   strerror(e));
      pthread_mutex_unlock(&sh->mu);
      break;
    }
    started++;
  }
  fn(sh);
  for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
  free(t);
}

/* A session's diagnostics go to the caller's sink under the lock, named by
 * their group. */
typedef struct fwd {
  shared *sh;
  int group;
} fwd;

static void forward(void *user, kf_diag_level level, const char *msg) {
  fwd *f = user;
  int n = (int)strlen(msg);
  while (n > 0 && msg[n - 1] == '\n') n--;
  pthread_mutex_lock(&f->sh->mu);
  kf_diag_report(f->sh->diag, level, "group %d: %.*s", f->group, n, msg);
  pthread_mutex_unlock(&f->sh->mu);
}

/* ---- ordering: the built-in units timed --------------------------------------------- */

/* Time c's built-in unit through the judge on a GPU of the queue: ms and
 * the fraction of the floor, or time_why. */
static void time_builtin(shared *sh, cand *c) {
  kf_judge_options jo = sh->ca->judge;
  jo.builtin = false; /* the built-in unit is the one judged */
  jo.min_time_ms = 50;
  kf_strbuf v, msg;
  kf_strbuf_init(&v);
  kf_strbuf_init(&msg);
  kf_diag d;
  kf_diag_init(&d, kf_diag_to_strbuf, &msg);
  jo.device = kf_judge_queue_take(sh->q);
  kf_status st = kf_judge_unit(c->dir, c->builtin, &jo, &v, &d);
  kf_judge_queue_give(sh->q, jo.device);
  cJSON *vj = v.data ? cJSON_Parse(v.data) : NULL;
  const cJSON *judged = cJSON_GetObjectItemCaseSensitive(vj, "judged");
  const cJSON *why = cJSON_GetObjectItemCaseSensitive(vj, "why");
  const cJSON *cd = cJSON_GetObjectItemCaseSensitive(vj, "candidate");
  const cJSON *ok = cJSON_GetObjectItemCaseSensitive(cd, "correct");
  const cJSON *ms = cJSON_GetObjectItemCaseSensitive(cd, "ms");
  const cJSON *cwhy = cJSON_GetObjectItemCaseSensitive(cd, "why");
  const cJSON *fl = cJSON_GetObjectItemCaseSensitive(vj, "floor");
  const cJSON *fms = cJSON_GetObjectItemCaseSensitive(fl, "ms");
  if (!vj || st != KF_OK || !cJSON_IsTrue(judged)) {
    const char *w = cJSON_IsString(why) ? why->valuestring : msg.data ? msg.data : kf_status_str(st);
    snprintf(c->time_why, sizeof c->time_why, "not judged: %s", w);
  } else if (!cJSON_IsTrue(ok) || !cJSON_IsNumber(ms) || !(ms->valuedouble > 0)) {
    snprintf(c->time_why, sizeof c->time_why, "it did not verify: %s",
             cJSON_IsString(cwhy) ? cwhy->valuestring : "no reason given");
  } else if (!cJSON_IsNumber(fms) || !(fms->valuedouble > 0)) {
    snprintf(c->time_why, sizeof c->time_why, "the judge gave no floor");
  } else {
    c->ms = ms->valuedouble;
    c->fraction = fms->valuedouble / c->ms;
  }
  char *nl = strchr(c->time_why, '\n');
  if (nl) *nl = '\0';
  cJSON_Delete(vj);
  kf_strbuf_fini(&v);
  kf_strbuf_fini(&msg);
}

static void *timer_main(void *arg) {
  shared *sh = arg;
  for (;;) {
    pthread_mutex_lock(&sh->mu);
    int i = sh->next < sh->n ? sh->next++ : -1;
    pthread_mutex_unlock(&sh->mu);
    if (i < 0) return NULL;
    time_builtin(sh, &sh->c[i]);
  }
}

/* Measured scores into c[].score, or false with why (then the static
 * estimate orders them). The first is timed alone: without a GPU the rest
 * is not tried. */
static bool order_measured(shared *sh, int jobs, char *why, size_t nwhy) {
  if (sh->co->no_tune) {
    snprintf(why, nwhy, "--no-judge: nothing is timed");
    return false;
  }
  if (sh->n == 0) return true;
  time_builtin(sh, &sh->c[0]);
  if (sh->c[0].ms < 0) {
    snprintf(why, nwhy, "group %d's built-in unit could not be timed: %s", sh->c[0].group, sh->c[0].time_why);
    return false;
  }
  sh->next = 1;
  run_threads(sh, jobs, timer_main);
  double total = 0;
  for (int i = 0; i < sh->n; i++) {
    if (sh->c[i].ms < 0) {
      snprintf(why, nwhy, "group %d's built-in unit could not be timed: %s", sh->c[i].group, sh->c[i].time_why);
      return false;
    }
    total += sh->c[i].copies * sh->c[i].ms;
  }
  for (int i = 0; i < sh->n; i++) {
    cand *c = &sh->c[i];
    double dist = 1.0 - c->fraction;
    c->score = c->copies * c->ms / total * (dist > 0 ? dist : 0);
  }
  return true;
}

/* ---- the sessions ------------------------------------------------------------------- */

typedef struct stop_ctx {
  shared *sh;
  cand *c;
} stop_ctx;

/* The per-model budgets, before each turn of every session. Under mu. */
static bool model_spent(shared *sh) {
  const kf_compile_agent_options *ca = sh->ca;
  if (sh->spent) return true;
  int64_t used = 0;
  for (int i = 0; i < sh->n; i++) used += sh->c[i].tokens;
  if (ca->tokens > 0 && used >= ca->tokens)
    snprintf(sh->spent_why, sizeof sh->spent_why, "the model's token budget (%lld) is spent", (long long)ca->tokens);
  else if (ca->seconds > 0 && kf_now_s() - sh->t0 >= ca->seconds)
    snprintf(sh->spent_why, sizeof sh->spent_why, "the model's time budget (%.0f s) is spent", ca->seconds);
  else
    return false;
  sh->spent = true;
  return true;
}

static bool should_stop(void *user, const kf_agent_result *r, char *why, size_t n) {
  stop_ctx *x = user;
  pthread_mutex_lock(&x->sh->mu);
  x->c->tokens = r->prompt_tokens + r->completion_tokens;
  bool stop = model_spent(x->sh);
  if (stop) snprintf(why, n, "%s", x->sh->spent_why);
  pthread_mutex_unlock(&x->sh->mu);
  return stop;
}

static void run_session(shared *sh, cand *c, int nth, int of) {
  const kf_compile_agent_options *ca = sh->ca;
  kf_agent_options o = *sh->ao;
  o.judge = kf_judge_bound_call;
  o.judge_user = &sh->jb;
  o.ready = kf_judge_ready; /* no token spent where nothing can be judged */
  o.ready_user = &sh->jb.o;
  stop_ctx x = {sh, c};
  o.should_stop = should_stop;
  o.stop_user = &x;
  if (ca->seconds > 0) {
    /* the session's time budget ends with the model's */
    double left = ca->seconds - (kf_now_s() - sh->t0);
    if (left < 1) left = 1;
    if (o.max_seconds <= 0 || o.max_seconds > left) o.max_seconds = left;
  }
  fwd f = {sh, c->group};
  kf_diag d;
  kf_diag_init(&d, forward, &f);
  if (sh->co->progress)
    fprintf(stderr, "kfuse: agent: group %d (%d of %d, score %.4g) started with %s\n", c->group, nth, of, c->score,
            o.llm.model);
  c->st = kf_agent_run(c->dir, c->out, &o, &c->r, &d);
  pthread_mutex_lock(&sh->mu);
  c->tokens = c->r.prompt_tokens + c->r.completion_tokens;
  if (c->st == KF_ERR_NOMEM && !sh->fatal) sh->fatal = c->st;
  pthread_mutex_unlock(&sh->mu);
  if (sh->co->progress)
    fprintf(stderr, "kfuse: agent: group %d: %s; %s (%d turns, %lld tokens, %.1f s)\n", c->group,
            c->r.stop[0] ? c->r.stop : kf_status_str(c->st),
            !c->st && c->r.have_unit ? "a verified unit" : "no verified unit, the built-in one stays", c->r.turns,
            (long long)c->tokens, c->r.seconds);
}

static void *session_main(void *arg) {
  shared *sh = arg;
  for (;;) {
    pthread_mutex_lock(&sh->mu);
    int i = sh->next;
    while (i < sh->n && sh->c[i].state != RUN) i++;
    sh->next = i < sh->n ? i + 1 : i;
    int nth = 0;
    for (int k = 0; k < i && k < sh->n; k++) nth += sh->c[k].state == RUN;
    bool spent = i < sh->n && (sh->fatal || model_spent(sh));
    if (spent) {
      sh->c[i].state = SKIP_BUDGET;
      snprintf(sh->c[i].why, sizeof sh->c[i].why, "not started: %s",
               sh->fatal ? kf_status_str(sh->fatal) : sh->spent_why);
    }
    pthread_mutex_unlock(&sh->mu);
    if (i >= sh->n) return NULL;
    if (!spent) run_session(sh, &sh->c[i], nth + 1, sh->runs);
  }
}

/* ---- agent.json --------------------------------------------------------------------- */

static const char *state_name(int s) {
  switch (s) {
  case RUN: return "ran";
  case SKIP_TARGET: return "at the target already";
  case SKIP_BUDGET: return "not started: a budget was spent";
  case SKIP_ERROR: return "not started: error";
  default: return "not chosen (--agent-groups)";
  }
}

static cJSON *summary(const shared *sh, bool measured, const char *order_why) {
  const kf_compile_agent_options *ca = sh->ca;
  cJSON *sum = cJSON_CreateObject();
  if (!sum) return NULL;
  cJSON_AddStringToObject(sum, "format", "kfuse-agent-compile-v1");
  cJSON_AddStringToObject(sum, "model", sh->ao->llm.model);
  char shown[1024]; /* no credentials or query in a report */
  kf_url_shown(sh->ao->llm.endpoint, shown, sizeof shown);
  cJSON_AddStringToObject(sum, "endpoint", shown);
  cJSON_AddStringToObject(sum, "skill_version", kf_agent_skill_version());
  cJSON *ord = cJSON_AddObjectToObject(sum, "ordering");
  cJSON_AddStringToObject(ord, "by", measured ? "measured" : "static");
  cJSON_AddStringToObject(ord, "score",
                          measured ? "copies x built-in ms / sum of copies x built-in ms over the model x (1 - "
                                     "fraction of the floor)"
                                   : "copies x the floor's time estimated for an H100 (bytes at 3.0 TB/s + FLOPs "
                                     "at 50 TFLOP/s), ms");
  if (!measured) cJSON_AddStringToObject(ord, "why", order_why);
  cJSON *b = cJSON_AddObjectToObject(sum, "budget");
  cJSON_AddNumberToObject(b, "groups", ca->groups);
  cJSON_AddNumberToObject(b, "jobs", ca->jobs);
  cJSON_AddNumberToObject(b, "gpus", ca->gpus);
  cJSON_AddNumberToObject(b, "tokens", (double)ca->tokens);
  cJSON_AddNumberToObject(b, "seconds", ca->seconds);
  cJSON_AddNumberToObject(b, "session_turns", sh->ao->max_turns);
  cJSON_AddNumberToObject(b, "session_judge_calls", sh->ao->max_judge);
  cJSON_AddNumberToObject(b, "session_tokens", (double)sh->ao->max_tokens);
  cJSON_AddNumberToObject(b, "session_seconds", sh->ao->max_seconds);
  cJSON_AddNumberToObject(b, "target_fraction", sh->ao->target_fraction);
  cJSON *groups = cJSON_AddArrayToObject(sum, "groups");
  cJSON *sess = cJSON_AddArrayToObject(sum, "sessions");
  int64_t tokens = 0;
  for (int i = 0; i < sh->n; i++) {
    const cand *c = &sh->c[i];
    cJSON *g = cJSON_CreateObject();
    if (!g) break;
    cJSON_AddNumberToObject(g, "group", c->group);
    cJSON_AddStringToObject(g, "key", c->key);
    cJSON_AddNumberToObject(g, "copies", c->copies);
    cJSON_AddNumberToObject(g, "score", c->score);
    cJSON_AddNumberToObject(g, "floor_estimate_ms", c->est_ms);
    if (c->ms > 0) {
      cJSON_AddNumberToObject(g, "builtin_ms", c->ms);
      cJSON_AddNumberToObject(g, "fraction_of_floor", c->fraction);
    }
    cJSON_AddStringToObject(g, "session", c->why[0] ? c->why : state_name(c->state));
    cJSON_AddItemToArray(groups, g);
    if (c->state != RUN) continue;
    const kf_agent_result *r = &c->r;
    bool have = !c->st && r->have_unit;
    cJSON *e = cJSON_CreateObject();
    if (!e) break;
    cJSON_AddNumberToObject(e, "group", c->group);
    cJSON_AddStringToObject(e, "key", c->key);
    cJSON_AddStringToObject(e, "dir", c->out);
    cJSON_AddNumberToObject(e, "score", c->score);
    cJSON_AddStringToObject(e, "ordering", measured ? "measured" : "static");
    cJSON_AddNumberToObject(e, "floor_estimate_ms", c->est_ms);
    if (c->ms > 0) {
      cJSON_AddNumberToObject(e, "builtin_ms", c->ms);
      cJSON_AddNumberToObject(e, "fraction_of_floor", c->fraction);
    }
    cJSON_AddStringToObject(e, "stop", c->st ? kf_status_str(c->st) : r->stop);
    cJSON_AddBoolToObject(e, "have_unit", have);
    if (have) {
      cJSON_AddNumberToObject(e, "best_reward", r->best_reward);
      cJSON_AddNumberToObject(e, "best_ms", r->best_ms);
      cJSON_AddNumberToObject(e, "best_fraction", r->best_fraction);
    }
    cJSON_AddNumberToObject(e, "turns", r->turns);
    cJSON_AddNumberToObject(e, "judge_calls", r->judge_calls);
    cJSON_AddNumberToObject(e, "prompt_tokens", (double)r->prompt_tokens);
    cJSON_AddNumberToObject(e, "completion_tokens", (double)r->completion_tokens);
    cJSON_AddNumberToObject(e, "tokens", (double)(r->prompt_tokens + r->completion_tokens));
    cJSON_AddNumberToObject(e, "seconds", r->seconds);
    cJSON_AddNumberToObject(e, "model_seconds", r->model_seconds);
    cJSON_AddNumberToObject(e, "judge_seconds", r->judge_seconds);
    cJSON_AddItemToArray(sess, e);
    tokens += r->prompt_tokens + r->completion_tokens;
  }
  cJSON_AddNumberToObject(sum, "tokens", (double)tokens);
  cJSON_AddNumberToObject(sum, "seconds", kf_now_s() - sh->t0);
  if (sh->spent) cJSON_AddStringToObject(sum, "budget_spent", sh->spent_why);
  return sum;
}

/* ---- the candidates --------------------------------------------------------------- */

/* The model's unique keys with a built-in unit, from tasks/tasks.json. */
static bool wanted(const kf_compile_agent_options *ca, const char *key) {
  if (!ca->only_keys) return true;
  for (int k = 0; k < ca->n_only; k++)
    if (strcmp(ca->only_keys[k], key) == 0) return true;
  return false;
}

static kf_status candidates(const char *tasks, const kf_compile_agent_options *ca, cand **out, int *nout,
                            kf_diag *diag) {
  *out = NULL;
  *nout = 0;
  char p[8300];
  snprintf(p, sizeof p, "%s/tasks.json", tasks);
  cJSON *list = read_json(p, diag);
  const cJSON *arr = list ? cJSON_GetObjectItemCaseSensitive(list, "tasks") : NULL;
  int n = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : 0;
  cand *c = calloc((size_t)(n ? n : 1), sizeof *c);
  if (!list || !c) {
    cJSON_Delete(list);
    free(c);
    return list ? KF_ERR_NOMEM : KF_ERR_FORMAT;
  }
  int nc = 0;
  for (int i = 0; i < n; i++) {
    const cJSON *t = cJSON_GetArrayItem(arr, i);
    const cJSON *gr = cJSON_GetObjectItemCaseSensitive(t, "group");
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(t, "key");
    const cJSON *dir = cJSON_GetObjectItemCaseSensitive(t, "dir");
    if (!cJSON_IsNumber(gr) || !cJSON_IsString(key) || strlen(key->valuestring) != 64 || !cJSON_IsString(dir)) continue;
    if (!wanted(ca, key->valuestring)) continue;
    int seen = -1;
    for (int k = 0; k < nc && seen < 0; k++)
      if (strcmp(c[k].key, key->valuestring) == 0) seen = k;
    if (seen >= 0) { /* a repeated block: one session serves every copy */
      c[seen].copies++;
      continue;
    }
    cand *x = &c[nc];
    memset(x, 0, sizeof *x);
    x->group = (int)gr->valuedouble;
    x->copies = 1;
    x->ms = x->fraction = -1;
    snprintf(x->key, sizeof x->key, "%s", key->valuestring);
    if ((size_t)snprintf(x->dir, sizeof x->dir, "%s/%s", tasks, (const char *)dir->valuestring) >= sizeof x->dir)
      continue;
    snprintf(p, sizeof p, "%s/task.json", x->dir);
    cJSON *tj = read_json(p, diag);
    const cJSON *bu = tj ? cJSON_GetObjectItemCaseSensitive(tj, "builtin_unit") : NULL;
    const cJSON *fl = tj ? cJSON_GetObjectItemCaseSensitive(tj, "floor") : NULL;
    const cJSON *by = cJSON_IsObject(fl) ? cJSON_GetObjectItemCaseSensitive(fl, "bytes") : NULL;
    const cJSON *fp = cJSON_IsObject(fl) ? cJSON_GetObjectItemCaseSensitive(fl, "flops") : NULL;
    bool fallback = cJSON_IsString(bu) && (size_t)snprintf(x->builtin, sizeof x->builtin, "%s/%s", x->dir,
                                                           bu->valuestring) < sizeof x->builtin;
    x->est_ms = kf_task_floor_estimate_ms(cJSON_IsNumber(by) ? by->valuedouble : 0,
                                          cJSON_IsNumber(fp) ? fp->valuedouble : 0);
    cJSON_Delete(tj);
    if (fallback) nc++; /* no built-in unit: no fallback, no session */
  }
  cJSON_Delete(list);
  *out = c;
  *nout = nc;
  return KF_OK;
}

void kf_compile_agent_options_init(kf_compile_agent_options *o) {
  memset(o, 0, sizeof *o);
  o->groups = 4;
  kf_judge_options_init(&o->judge);
}

kf_status kf_compile_agent(const char *model, const kf_compile_options *co, const kf_agent_options *ao,
                           const char *agent_dir, const kf_compile_agent_options *cao, kf_compile_given *given,
                           kf_diag *diag) {
  given->n = given->n_tried = 0;
  double t0 = kf_now_s();
  char tasks[4096];
  snprintf(tasks, sizeof tasks, "%s/tasks", agent_dir);
  if (mkdir(agent_dir, 0755) != 0) {
    kf_diag_error(diag, "--agent-dir %s: cannot create it: %s%s", agent_dir, strerror(errno),
                  errno == EEXIST ? " (it must not exist)" : "");
    return KF_ERR_IO;
  }
  kf_load_options lo;
  kf_load_options_init(&lo);
  kf_graph *g = NULL;
  kf_status st = kf_model_load(model, &lo, &g, diag);
  if (st == KF_OK) st = kf_graph_verify(g, diag);
  if (st == KF_OK) st = kf_task_write(g, co, -1, tasks, diag);
  kf_graph_destroy(g);
  if (st) return st;
  cand *c = NULL;
  int nc = 0;
  if ((st = candidates(tasks, cao, &c, &nc, diag))) return st;
  kf_compile_agent_options ca = *cao;
  if (ca.groups < 1) ca.groups = 1;
  if (ca.gpus < 1) ca.gpus = visible_gpus();
  int chosen = nc < ca.groups ? nc : ca.groups;
  if (ca.jobs < 1) ca.jobs = chosen < 4 ? chosen : 4;
  if (ca.jobs < 1) ca.jobs = 1;
  shared sh;
  memset(&sh, 0, sizeof sh);
  sh.c = c;
  sh.n = nc;
  sh.ca = &ca;
  sh.ao = ao;
  sh.co = co;
  sh.t0 = t0;
  sh.diag = diag;
  if ((st = kf_judge_queue_create(ca.gpus, &sh.q))) {
    free(c);
    return st;
  }
  sh.jb.o = ca.judge;
  sh.jb.queue = sh.q;
  if (pthread_mutex_init(&sh.mu, NULL) != 0) {
    kf_judge_queue_destroy(sh.q);
    free(c);
    return KF_ERR_NOMEM;
  }
  /* the largest static estimates first: timed first, and the order of
   * the static ordering */
  for (int i = 0; i < nc; i++) c[i].score = c[i].copies * c[i].est_ms;
  qsort(c, (size_t)nc, sizeof *c, by_score);
  char why[512] = "";
  if (co->progress && nc > 0 && !co->no_tune)
    fprintf(stderr, "kfuse: agent: timing the built-in units of %d group%s on %d GPU%s to order them\n", nc,
            nc == 1 ? "" : "s", ca.gpus, ca.gpus == 1 ? "" : "s");
  bool measured = order_measured(&sh, ca.jobs < nc ? ca.jobs : nc, why, sizeof why);
  if (!measured)
    for (int i = 0; i < nc; i++) c[i].score = c[i].copies * c[i].est_ms;
  qsort(c, (size_t)nc, sizeof *c, by_score);
  for (int i = 0, k = 0; i < nc; i++) {
    if (measured && ao->target_fraction > 0 && c[i].fraction >= ao->target_fraction) {
      c[i].state = SKIP_TARGET;
      snprintf(c[i].why, sizeof c[i].why, "no session: the built-in unit is at %.2f of the floor already",
               c[i].fraction);
    } else if (k < ca.groups) {
      c[i].state = RUN;
      k++;
      if ((size_t)snprintf(c[i].out, sizeof c[i].out, "%s/group_%d", agent_dir, c[i].group) >= sizeof c[i].out) {
        c[i].state = SKIP_ERROR;
        snprintf(c[i].why, sizeof c[i].why, "not started: the path under --agent-dir is too long");
      }
    }
  }
  if (co->progress)
    fprintf(stderr, "kfuse: agent: groups ordered by %s%s%s\n",
            measured ? "share of the model's time x distance from the floor (measured)"
                     : "the floor's time estimated for an H100 (static)",
            measured ? "" : ": ", measured ? "" : why);
  sh.next = 0;
  for (int i = 0; i < nc; i++) sh.runs += c[i].state == RUN;
  run_threads(&sh, ca.jobs, session_main);
  for (int i = 0; i < nc; i++) {
    if (c[i].state == RUN && given->n_tried < KF_COMPILE_GIVEN_MAX)
      snprintf(given->tried[given->n_tried++], sizeof given->tried[0], "%s", c[i].key);
    if (c[i].state != RUN || c[i].st || !c[i].r.have_unit) continue;
    if (given->n >= KF_COMPILE_GIVEN_MAX) {
      kf_diag_warn(diag, "agent: group %d's verified unit left out: at most %d units are given to one compile",
                   c[i].group, KF_COMPILE_GIVEN_MAX);
      continue;
    }
    snprintf(given->keys[given->n], sizeof given->keys[0], "%s", c[i].key);
    snprintf(given->dirs[given->n], sizeof given->dirs[0], "%s", c[i].out);
    given->n++;
  }
  st = sh.fatal;
  cJSON *sum = summary(&sh, measured, why);
  char *text = sum ? cJSON_Print(sum) : NULL;
  cJSON_Delete(sum);
  if (text) {
    char p[4200];
    snprintf(p, sizeof p, "%s/agent.json", agent_dir);
    if (kf_write_file_atomic(p, text, strlen(text), diag) != KF_OK && !st) st = KF_ERR_IO;
    free(text);
  } else if (!st) {
    st = KF_ERR_NOMEM;
  }
  pthread_mutex_destroy(&sh.mu);
  kf_judge_queue_destroy(sh.q);
  free(c);
  return st;
}

/* ---- the compile's report ----------------------------------------------------------- */

kf_status kf_compile_agent_report(const char *agent_dir, const char *report, bool progress, kf_diag *diag) {
  char p[4200];
  snprintf(p, sizeof p, "%s/agent.json", agent_dir);
  cJSON *a = read_json(p, diag);
  cJSON *r = a ? read_json(report, diag) : NULL;
  if (!a || !r) {
    cJSON_Delete(a);
    cJSON_Delete(r);
    return KF_ERR_IO;
  }
  const cJSON *gl = cJSON_GetObjectItemCaseSensitive(r, "group_list");
  cJSON *sess = cJSON_GetObjectItemCaseSensitive(a, "sessions");
  int used = 0, offered = 0;
  cJSON *s;
  cJSON_ArrayForEach(s, sess) {
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(s, "key");
    bool have = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "have_unit"));
    bool in = false;
    const cJSON *e;
    cJSON_ArrayForEach(e, gl) {
      const cJSON *k = cJSON_GetObjectItemCaseSensitive(e, "key");
      if (!have || !cJSON_IsString(key) || !cJSON_IsString(k) || strcmp(k->valuestring, key->valuestring) != 0)
        continue;
      const cJSON *cd;
      cJSON_ArrayForEach(cd, cJSON_GetObjectItemCaseSensitive(e, "candidates")) {
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(cd, "candidate");
        if (cJSON_IsString(l) && strcmp(l->valuestring, "given") == 0 &&
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cd, "chosen")))
          in = true;
      }
    }
    offered += have;
    used += in;
    cJSON_AddBoolToObject(s, "in_module", in);
  }
  cJSON_AddNumberToObject(a, "units_verified", offered);
  cJSON_AddNumberToObject(a, "units_replaced", used);
  cJSON_AddStringToObject(a, "note", used ? "agent units replaced built-in ones where in_module is true"
                                          : "no agent unit replaced a built-in one: the module holds the built-in "
                                            "units");
  cJSON_AddItemToObject(r, "agent", a);
  char *text = cJSON_Print(r);
  cJSON_Delete(r);
  kf_status st = text ? kf_write_file_atomic(report, text, strlen(text), diag) : KF_ERR_NOMEM;
  free(text);
  if (!st && progress)
    fprintf(stderr, "kfuse: agent: %d of %d verified agent unit%s replaced built-in ones (the report's \"agent\")\n",
            used, offered, offered == 1 ? "" : "s");
  return st;
}
