/* tools/serve.c — `kfuse serve`'s service: the kernel environment's
 * sessions (kfuse/env_session.h) over a JSON API for RL trainers
 * (tools/serve_int.h; docs/AGENT.md, "The rollout service").
 *
 *   GET    /v1/health               the service's state
 *   GET    /v1/tasks                the tasks under --tasks (id, key, kind, ops)
 *   POST   /v1/sessions             {"task", "max_judge"?, "max_calls"?, "model"?}: a session
 *   GET    /v1/sessions             the open sessions
 *   GET    /v1/sessions/SID         one session's state
 *   POST   /v1/sessions/SID/tools   {"name", "arguments"?, "id"?, "turn"?, "message"?}: one tool call
 *   DELETE /v1/sessions/SID         close it: its result
 *
 * Sessions live in a table under one mutex; a request marks the session
 * it works on busy, so one session runs one call at a time (another gets
 * 409) and is never closed under a call. Judge calls wait for a GPU in a
 * FIFO queue (kf_judge_queue: one judge call a GPU at a time) and run on
 * its ordinal.
 * Session ids are 128 random bits. Each session writes
 * OUT_DIR/sessions/SID/ as `kfuse agent` writes its OUT_DIR. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "kfuse/env_session.h"
#include "serve_int.h"

#define TASK_DEPTH 3   /* task ids: up to this many path components under --tasks */
#define TASKS_MAX 4096 /* listed at most */

typedef struct ssn {
  char sid[33];
  char task[256];
  kf_env_session *env;
  bool busy;   /* a request works on it */
  bool done;   /* submitted */
  double last; /* when last used */
  int max_calls, max_judge;
} ssn;

struct kf_serve {
  kf_serve_options o;
  char tasks_real[PATH_MAX];
  char out_dir[PATH_MAX];
  pthread_mutex_t mu;
  ssn **tab; /* max_sessions slots */
  int open;
  kf_judge_queue *gq; /* judge calls wait here for a GPU */
  kf_judge_binding jb; /* every session's judge: the options, the queue */
};

char *kf_serve_error_body(const char *msg) {
  cJSON *o = cJSON_CreateObject();
  if (!o || !cJSON_AddStringToObject(o, "error", msg)) {
    cJSON_Delete(o);
    return NULL;
  }
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return s;
}

/* ---- create, destroy -------------------------------------------------------------- */

kf_status kf_serve_create(const kf_serve_options *o, kf_serve **out, kf_diag *diag) {
  *out = NULL;
  if (!o->tasks_dir || !o->out_dir || o->gpus < 1 || o->max_sessions < 1) {
    kf_diag_error(diag, "serve: --tasks, -o, at least one GPU and one session are needed");
    return KF_ERR_ARG;
  }
  kf_serve *s = calloc(1, sizeof *s);
  if (!s) return KF_ERR_NOMEM;
  s->o = *o;
  s->tab = calloc((size_t)o->max_sessions, sizeof *s->tab);
  kf_status st = s->tab ? kf_judge_queue_create(o->gpus, &s->gq) : KF_ERR_NOMEM;
  if (st) goto fail;
  s->jb.o = o->judge;
  s->jb.queue = s->gq;
  struct stat sb;
  if (!realpath(o->tasks_dir, s->tasks_real) || stat(s->tasks_real, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    kf_diag_error(diag, "serve: --tasks %s: not a directory", o->tasks_dir);
    st = KF_ERR_IO;
    goto fail;
  }
  if (mkdir(o->out_dir, 0755) != 0 && errno != EEXIST) {
    kf_diag_error(diag, "serve: cannot create %s: %s", o->out_dir, strerror(errno));
    st = KF_ERR_IO;
    goto fail;
  }
  char sd[PATH_MAX + 16];
  if (!realpath(o->out_dir, s->out_dir) || snprintf(sd, sizeof sd, "%s/sessions", s->out_dir) >= (int)sizeof sd ||
      (mkdir(sd, 0755) != 0 && errno != EEXIST) || stat(sd, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    kf_diag_error(diag, "serve: cannot create %s/sessions: %s", o->out_dir, strerror(errno));
    st = KF_ERR_IO;
    goto fail;
  }
  s->o.tasks_dir = s->tasks_real;
  s->o.out_dir = s->out_dir;
  pthread_mutex_init(&s->mu, NULL);
  *out = s;
  return KF_OK;
fail:
  free(s->tab);
  kf_judge_queue_destroy(s->gq);
  free(s);
  return st;
}

/* Write the session's result and free it: its result (the caller's), or
 * NULL when out of memory. */
static cJSON *finish(kf_serve *s, ssn *x, const char *stop) {
  kf_diag d;
  kf_diag_init(&d, NULL, NULL);
  cJSON *r = kf_env_session_result(x->env, stop);
  cJSON *copy = r ? cJSON_Duplicate(r, 1) : NULL;
  if (r) kf_env_session_end(x->env, r, &d);
  if (!s->o.quiet) fprintf(stderr, "kfuse: serve: session %s closed: %s\n", x->sid, stop);
  kf_env_session_destroy(x->env);
  free(x);
  return copy;
}

int kf_serve_sessions(kf_serve *s) {
  pthread_mutex_lock(&s->mu);
  int n = s->open;
  pthread_mutex_unlock(&s->mu);
  return n;
}

void kf_serve_reap(kf_serve *s) {
  double t = kf_now_s();
  for (;;) {
    ssn *x = NULL;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->o.max_sessions; i++) {
      ssn *y = s->tab[i];
      if (y && y->env && !y->busy && t - y->last >= s->o.idle_s) {
        x = y;
        s->tab[i] = NULL;
        s->open--;
        break;
      }
    }
    pthread_mutex_unlock(&s->mu);
    if (!x) return;
    char why[96];
    snprintf(why, sizeof why, "idle for %.0f s: closed by the service", s->o.idle_s);
    cJSON_Delete(finish(s, x, why));
  }
}

void kf_serve_destroy(kf_serve *s) {
  if (!s) return;
  for (int i = 0; i < s->o.max_sessions; i++) {
    if (!s->tab[i]) continue;
    if (s->tab[i]->env) cJSON_Delete(finish(s, s->tab[i], "the service stopped"));
    else free(s->tab[i]);
    s->tab[i] = NULL;
  }
  pthread_mutex_destroy(&s->mu);
  kf_judge_queue_destroy(s->gq);
  free(s->tab);
  free(s);
}

/* ---- helpers ---------------------------------------------------------------------- */

typedef struct reply {
  int status;
  cJSON *body; /* NULL: {"error": why} */
  const char *why;
  char whybuf[512];
} reply;

static void fail(reply *r, int status, const char *why) {
  r->status = status;
  cJSON_Delete(r->body);
  r->body = NULL;
  r->why = why;
}

static void failf(reply *r, int status, const char *fmt, const char *a) {
  snprintf(r->whybuf, sizeof r->whybuf, fmt, a);
  fail(r, status, r->whybuf);
}

static void ok(reply *r, cJSON *body) {
  r->status = body ? 200 : 500;
  r->body = body;
  r->why = body ? NULL : "out of memory";
}

/* A task id: up to TASK_DEPTH components of [A-Za-z0-9._-], none starting
 * with '.', joined by '/'. */
static bool task_id_ok(const char *id) {
  size_t n = strlen(id);
  if (!n || n >= 256) return false;
  int parts = 1;
  bool start = true;
  for (const char *p = id; *p; p++) {
    char c = *p;
    if (c == '/') {
      if (start) return false;
      parts++;
      start = true;
      continue;
    }
    if (start && c == '.') return false;
    start = false;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
          c == '-'))
      return false;
  }
  return !start && parts <= TASK_DEPTH;
}

/* The task directory of id, inside --tasks and holding task.json; NULL
 * when there is none. */
static bool task_dir(kf_serve *s, const char *id, char *out, size_t n) {
  if (!task_id_ok(id)) return false;
  char joined[PATH_MAX + 256], real[PATH_MAX], tj[PATH_MAX + 16];
  snprintf(joined, sizeof joined, "%s/%s", s->tasks_real, id);
  if (!realpath(joined, real)) return false;
  size_t k = strlen(s->tasks_real);
  if (strncmp(real, s->tasks_real, k) != 0 || real[k] != '/') return false;
  snprintf(tj, sizeof tj, "%s/task.json", real);
  struct stat sb;
  if (stat(tj, &sb) != 0 || !S_ISREG(sb.st_mode)) return false;
  snprintf(out, n, "%s", real);
  return true;
}

static void add_task(cJSON *list, const char *dir, const char *id) {
  char tj[PATH_MAX + 16];
  snprintf(tj, sizeof tj, "%s/task.json", dir);
  char *t = NULL;
  kf_strbuf ignored;
  kf_strbuf_init(&ignored);
  kf_diag quiet;
  kf_diag_init(&quiet, kf_diag_to_strbuf, &ignored);
  cJSON *j = kf_read_text(tj, 16 << 20, &t, &quiet) == KF_OK ? cJSON_Parse(t) : NULL;
  free(t);
  kf_strbuf_fini(&ignored);
  cJSON *e = cJSON_CreateObject();
  if (!e) {
    cJSON_Delete(j);
    return;
  }
  cJSON_AddStringToObject(e, "id", id);
  static const char *const keys[] = {"key", "model", "group", "kind", "precision", "target"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, keys[i]);
    if (cJSON_IsString(v) || cJSON_IsNumber(v)) cJSON_AddItemToObject(e, keys[i], cJSON_Duplicate(v, 0));
  }
  const cJSON *ops = cJSON_GetObjectItemCaseSensitive(j, "ops");
  cJSON *names = cJSON_AddArrayToObject(e, "ops");
  const cJSON *op;
  cJSON_ArrayForEach(op, ops) {
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(op, "op");
    if (names && cJSON_IsString(nm)) cJSON_AddItemToArray(names, cJSON_CreateString(nm->valuestring));
  }
  if (!j) cJSON_AddStringToObject(e, "error", "task.json cannot be read");
  cJSON_Delete(j);
  cJSON_AddItemToArray(list, e);
}

/* The task directories under dir (id its path under --tasks), sorted. */
static void walk(cJSON *list, const char *dir, const char *id, int depth) {
  if (cJSON_GetArraySize(list) >= TASKS_MAX) return;
  char p[PATH_MAX + 16];
  struct stat sb;
  snprintf(p, sizeof p, "%s/task.json", dir);
  if (id[0] && stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) {
    add_task(list, dir, id);
    return;
  }
  if (depth >= TASK_DEPTH) return;
  struct dirent **names = NULL;
  int n = scandir(dir, &names, NULL, alphasort);
  for (int i = 0; i < n; i++) {
    const char *nm = names[i]->d_name;
    char sub[PATH_MAX + 256], sid[512];
    if (nm[0] != '.' && snprintf(sub, sizeof sub, "%s/%s", dir, nm) < (int)sizeof sub &&
        snprintf(sid, sizeof sid, "%s%s%s", id, id[0] ? "/" : "", nm) < (int)sizeof sid && task_id_ok(sid) &&
        stat(sub, &sb) == 0 && S_ISDIR(sb.st_mode))
      walk(list, sub, sid, depth + 1);
    free(names[i]);
  }
  free(names);
}

/* The session sid, marked busy: NULL with the reply set (404, 409). */
static ssn *acquire(kf_serve *s, const char *sid, reply *r) {
  ssn *x = NULL;
  pthread_mutex_lock(&s->mu);
  for (int i = 0; i < s->o.max_sessions && !x; i++)
    if (s->tab[i] && s->tab[i]->env && strcmp(s->tab[i]->sid, sid) == 0) x = s->tab[i];
  if (!x) failf(r, 404, "no open session '%s' (closed, timed out, or never opened)", sid);
  else if (x->busy) {
    fail(r, 409, "the session is busy with another call; one call at a time");
    x = NULL;
  } else {
    x->busy = true;
  }
  pthread_mutex_unlock(&s->mu);
  return x;
}

static void release(kf_serve *s, ssn *x) {
  pthread_mutex_lock(&s->mu);
  x->busy = false;
  x->last = kf_now_s();
  pthread_mutex_unlock(&s->mu);
}

static cJSON *state(kf_serve *s, ssn *x) {
  kf_env_stats e;
  kf_env_session_stats(x->env, &e);
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "session", x->sid);
  cJSON_AddStringToObject(o, "task", x->task);
  cJSON_AddStringToObject(o, "state", x->done ? "submitted" : "open");
  cJSON_AddNumberToObject(o, "tool_calls", e.tool_calls);
  cJSON_AddNumberToObject(o, "units_written", e.units_written);
  cJSON_AddNumberToObject(o, "judge_calls", e.judge_calls);
  cJSON_AddBoolToObject(o, "have_unit", e.have_unit);
  if (e.have_unit) {
    cJSON_AddNumberToObject(o, "best_reward", e.best_reward);
    cJSON_AddNumberToObject(o, "best_ms", e.best_ms);
    cJSON_AddNumberToObject(o, "best_fraction", e.best_fraction);
  } else {
    cJSON_AddNullToObject(o, "best_reward");
  }
  cJSON *b = cJSON_AddObjectToObject(o, "budget");
  if (b) {
    cJSON_AddNumberToObject(b, "tool_calls", x->max_calls);
    cJSON_AddNumberToObject(b, "judge_calls", x->max_judge);
  }
  cJSON_AddNumberToObject(o, "seconds", e.seconds);
  (void)s;
  return o;
}

/* An integer budget from body (at most cap, at least 1; absent: cap). */
static bool budget(const cJSON *body, const char *name, int cap, int *out, reply *r) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, name);
  *out = cap;
  if (!v || cJSON_IsNull(v)) return true;
  if (!cJSON_IsNumber(v) || v->valuedouble != (double)(long long)v->valuedouble || v->valuedouble < 1) {
    failf(r, 400, "%s must be a whole number, at least 1", name);
    return false;
  }
  if (cap == 0 || v->valuedouble < cap) *out = (int)v->valuedouble;
  return true;
}

/* ---- the routes ------------------------------------------------------------------- */

static void health(kf_serve *s, reply *r) {
  cJSON *o = cJSON_CreateObject();
  if (o) {
    /* "ok" only where a judge call can run: NVRTC loads and the driver
     * sees the GPUs the service was started for */
    char why[400] = "";
    kf_judge_options jo = s->jb.o;
    jo.queue = s->jb.queue;
    bool ready = kf_judge_ready(&jo, why, sizeof why);
    cJSON_AddStringToObject(o, "status", ready ? "ok" : "degraded");
    if (!ready) cJSON_AddStringToObject(o, "judge", why);
    cJSON_AddStringToObject(o, "format", "kfuse-serve-v1");
    cJSON_AddStringToObject(o, "skill_version", kf_env_skill_version());
    cJSON_AddNumberToObject(o, "sessions", kf_serve_sessions(s));
    cJSON_AddNumberToObject(o, "max_sessions", s->o.max_sessions);
    cJSON_AddNumberToObject(o, "gpus", s->o.gpus);
  }
  ok(r, o);
}

static void tasks(kf_serve *s, reply *r) {
  cJSON *o = cJSON_CreateObject();
  cJSON *list = o ? cJSON_AddArrayToObject(o, "tasks") : NULL;
  if (list) walk(list, s->tasks_real, "", 0);
  ok(r, list ? o : (cJSON_Delete(o), NULL));
}

static void list_sessions(kf_serve *s, reply *r) {
  cJSON *o = cJSON_CreateObject();
  cJSON *a = o ? cJSON_AddArrayToObject(o, "sessions") : NULL;
  pthread_mutex_lock(&s->mu);
  for (int i = 0; a && i < s->o.max_sessions; i++) {
    ssn *x = s->tab[i];
    if (!x || !x->env) continue;
    cJSON *e = cJSON_CreateObject();
    if (!e) continue;
    cJSON_AddStringToObject(e, "session", x->sid);
    cJSON_AddStringToObject(e, "task", x->task);
    cJSON_AddBoolToObject(e, "busy", x->busy);
    cJSON_AddStringToObject(e, "state", x->done ? "submitted" : "open");
    cJSON_AddItemToArray(a, e);
  }
  pthread_mutex_unlock(&s->mu);
  ok(r, a ? o : (cJSON_Delete(o), NULL));
}

static void open_session(kf_serve *s, const cJSON *body, reply *r) {
  const cJSON *task = cJSON_GetObjectItemCaseSensitive(body, "task");
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(body, "model");
  if (!cJSON_IsString(task)) { fail(r, 400, "\"task\" must be a task id (GET /v1/tasks lists them)"); return; }
  if (model && (!cJSON_IsString(model) || strlen(model->valuestring) > 200))
    { fail(r, 400, "\"model\" must be a name of at most 200 characters"); return; }
  char dir[PATH_MAX];
  if (!task_dir(s, task->valuestring, dir, sizeof dir))
  {
    failf(r, 404, "no task '%.200s' under --tasks (GET /v1/tasks lists them)", task->valuestring);
    return;
  }
  int max_judge, max_calls;
  if (!budget(body, "max_judge", s->o.max_judge, &max_judge, r) ||
      !budget(body, "max_calls", s->o.max_calls, &max_calls, r))
    return;
  unsigned char rnd[16];
  if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) { fail(r, 500, "getrandom failed"); return; }
  ssn *x = calloc(1, sizeof *x);
  if (!x) { fail(r, 500, "out of memory"); return; }
  for (int i = 0; i < 16; i++) snprintf(x->sid + 2 * i, 3, "%02x", rnd[i]);
  snprintf(x->task, sizeof x->task, "%s", task->valuestring);
  x->busy = true;
  x->max_calls = max_calls;
  x->max_judge = max_judge;
  /* a slot first, so the limit holds while the session opens */
  int slot = -1;
  pthread_mutex_lock(&s->mu);
  for (int i = 0; i < s->o.max_sessions && slot < 0; i++)
    if (!s->tab[i]) slot = i;
  if (slot >= 0) s->tab[slot] = x;
  pthread_mutex_unlock(&s->mu);
  if (slot < 0) {
    free(x);
    snprintf(r->whybuf, sizeof r->whybuf, "%d sessions are open, the most this service takes (--max-sessions); "
             "close one or retry later", s->o.max_sessions);
    { fail(r, 429, r->whybuf); return; }
  }
  kf_env_options eo;
  kf_env_options_init(&eo);
  eo.max_judge = max_judge;
  eo.judge = kf_judge_bound_call;
  eo.judge_user = &s->jb;
  eo.source = "serve";
  eo.model = cJSON_IsString(model) ? model->valuestring : NULL;
  cJSON *b = cJSON_CreateObject();
  if (b) {
    cJSON_AddNumberToObject(b, "tool_calls", max_calls);
    cJSON_AddNumberToObject(b, "judge_calls", max_judge);
  }
  eo.budget = b;
  char out[PATH_MAX + 64];
  snprintf(out, sizeof out, "%s/sessions/%s", s->out_dir, x->sid);
  kf_strbuf msg;
  kf_strbuf_init(&msg);
  kf_diag d;
  kf_diag_init(&d, kf_diag_to_strbuf, &msg);
  kf_env_session *env = NULL;
  kf_status st = b ? kf_env_session_open(dir, out, &eo, &env, &d) : KF_ERR_NOMEM;
  if (st) {
    pthread_mutex_lock(&s->mu);
    s->tab[slot] = NULL;
    pthread_mutex_unlock(&s->mu);
    free(x);
    fprintf(stderr, "kfuse: serve: a session on %s did not open: %s", task->valuestring,
            msg.data ? msg.data : kf_status_str(st));
    failf(r, 500, "the session did not open: %s", msg.data ? msg.data : kf_status_str(st));
  } else {
    cJSON *o = cJSON_CreateObject();
    if (o) {
      cJSON_AddStringToObject(o, "session", x->sid);
      cJSON_AddStringToObject(o, "task", x->task);
      cJSON_AddStringToObject(o, "task_key", kf_env_session_task_key(env));
      cJSON_AddStringToObject(o, "skill_version", kf_env_skill_version());
      cJSON_AddStringToObject(o, "system", kf_env_session_system(env));
      cJSON_AddStringToObject(o, "prompt", kf_env_session_prompt(env));
      cJSON_AddItemToObject(o, "tools", cJSON_Duplicate(kf_env_session_tools(env), 1));
      cJSON_AddItemToObject(o, "budget", cJSON_Duplicate(b, 1));
      char rel[64];
      snprintf(rel, sizeof rel, "sessions/%s", x->sid);
      cJSON_AddStringToObject(o, "dir", rel);
    }
    pthread_mutex_lock(&s->mu);
    x->env = env;
    x->busy = false;
    x->last = kf_now_s();
    s->open++;
    pthread_mutex_unlock(&s->mu);
    if (!s->o.quiet) fprintf(stderr, "kfuse: serve: session %s opened on %s\n", x->sid, x->task);
    ok(r, o);
  }
  cJSON_Delete(b);
  kf_strbuf_fini(&msg);
}

static void call_tool(kf_serve *s, const char *sid, const cJSON *body, reply *r) {
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(body, "name");
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(body, "arguments");
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(body, "id");
  const cJSON *turn = cJSON_GetObjectItemCaseSensitive(body, "turn");
  const cJSON *msg = cJSON_GetObjectItemCaseSensitive(body, "message");
  if (!cJSON_IsString(name) || !name->valuestring[0])
    { fail(r, 400, "\"name\" must be the tool's name (the session's tools list them)"); return; }
  if (id && !cJSON_IsString(id)) { fail(r, 400, "\"id\" must be a string (the tool call's id)"); return; }
  if (turn && !cJSON_IsNumber(turn)) { fail(r, 400, "\"turn\" must be a number"); return; }
  if (msg && !cJSON_IsObject(msg)) { fail(r, 400, "\"message\" must be the assistant's message (an object)"); return; }
  ssn *x = acquire(s, sid, r);
  if (!x) return;
  kf_env_stats e;
  kf_env_session_stats(x->env, &e);
  if (x->done) {
    release(s, x);
    fail(r, 409, "the session was submitted; close it (DELETE) for its result");
    return;
  }
  if (x->max_calls > 0 && e.tool_calls >= x->max_calls) {
    release(s, x);
    snprintf(r->whybuf, sizeof r->whybuf, "the tool-call budget of this session (%d calls) is spent; close it",
             x->max_calls);
    fail(r, 409, r->whybuf);
    return;
  }
  /* the arguments: an object, JSON text of one, or nothing (no arguments) */
  char *text = NULL;
  cJSON *parsed = NULL;
  const char *why = NULL;
  if (!args || cJSON_IsNull(args)) {
    parsed = cJSON_CreateObject();
  } else if (cJSON_IsObject(args)) {
    parsed = cJSON_Duplicate(args, 1);
    text = cJSON_PrintUnformatted(args);
  } else if (cJSON_IsString(args)) {
    text = strdup(args->valuestring);
    parsed = cJSON_Parse(args->valuestring);
    if (!parsed) why = "the arguments are not valid JSON";
    else if (!cJSON_IsObject(parsed)) why = "the arguments are not a JSON object";
  } else {
    why = "the arguments are not a JSON object";
  }
  if (why) {
    cJSON_Delete(parsed);
    parsed = NULL;
  }
  if (msg) {
    cJSON *rec = cJSON_CreateObject();
    if (rec) {
      cJSON_AddStringToObject(rec, "type", "assistant");
      if (turn) cJSON_AddNumberToObject(rec, "turn", turn->valuedouble);
      cJSON_AddItemToObject(rec, "message", cJSON_Duplicate(msg, 1));
    }
    kf_env_session_record(x->env, rec, NULL);
  }
  kf_env_step step;
  kf_diag d;
  kf_diag_init(&d, NULL, NULL);
  kf_status st = (why || parsed) ? kf_env_session_call(x->env, cJSON_IsString(id) ? id->valuestring : NULL,
                                                        name->valuestring, text, parsed, why,
                                                        turn ? (int)turn->valuedouble : 0, &step, &d)
                                 : KF_ERR_NOMEM;
  cJSON_Delete(parsed);
  free(text);
  if (st) {
    release(s, x);
    { fail(r, 500, "out of memory"); return; }
  }
  if (step.done) {
    pthread_mutex_lock(&s->mu); /* list_sessions reads it */
    x->done = true;
    pthread_mutex_unlock(&s->mu);
  }
  kf_env_session_stats(x->env, &e);
  cJSON *o = cJSON_CreateObject();
  if (o) {
    cJSON_AddStringToObject(o, "observation", step.observation);
    if (step.verdict) {
      cJSON_AddItemToObject(o, "verdict", step.verdict);
      step.verdict = NULL;
    } else {
      cJSON_AddNullToObject(o, "verdict");
    }
    if (step.judged) cJSON_AddNumberToObject(o, "reward", step.reward);
    else cJSON_AddNullToObject(o, "reward");
    cJSON_AddBoolToObject(o, "done", step.done);
    if (e.have_unit) cJSON_AddNumberToObject(o, "best_reward", e.best_reward);
    else cJSON_AddNullToObject(o, "best_reward");
    cJSON_AddNumberToObject(o, "tool_calls", e.tool_calls);
    cJSON_AddNumberToObject(o, "judge_calls", e.judge_calls);
  }
  kf_env_step_fini(&step);
  release(s, x);
  ok(r, o);
}

/* GET /v1/sessions/SID: a session busy with a call says so, without its
 * counts (the call is changing them) */
static void session_state(kf_serve *s, const char *sid, reply *r) {
  ssn *x = NULL;
  cJSON *o = NULL;
  pthread_mutex_lock(&s->mu);
  for (int i = 0; i < s->o.max_sessions && !x; i++)
    if (s->tab[i] && s->tab[i]->env && strcmp(s->tab[i]->sid, sid) == 0) x = s->tab[i];
  if (x && x->busy) {
    o = cJSON_CreateObject();
    if (o) {
      cJSON_AddStringToObject(o, "session", x->sid);
      cJSON_AddStringToObject(o, "task", x->task);
      cJSON_AddStringToObject(o, "state", x->done ? "submitted" : "open");
      cJSON_AddBoolToObject(o, "busy", true);
    }
    x = NULL;
    pthread_mutex_unlock(&s->mu);
    ok(r, o);
    return;
  }
  if (x) x->busy = true;
  pthread_mutex_unlock(&s->mu);
  if (!x) {
    failf(r, 404, "no open session '%s' (closed, timed out, or never opened)", sid);
    return;
  }
  o = state(s, x);
  if (o) cJSON_AddBoolToObject(o, "busy", false);
  release(s, x);
  ok(r, o);
}

static void close_session(kf_serve *s, const char *sid, reply *r) {
  ssn *x = acquire(s, sid, r);
  if (!x) return;
  pthread_mutex_lock(&s->mu);
  for (int i = 0; i < s->o.max_sessions; i++)
    if (s->tab[i] == x) s->tab[i] = NULL;
  s->open--;
  pthread_mutex_unlock(&s->mu);
  kf_env_stats e;
  kf_env_session_stats(x->env, &e);
  char id[33];
  snprintf(id, sizeof id, "%s", x->sid);
  cJSON *res = finish(s, x, x->done ? "submitted" : "closed by the client");
  cJSON *o = cJSON_CreateObject();
  if (!o || !res) {
    cJSON_Delete(o);
    cJSON_Delete(res);
    { fail(r, 500, "out of memory"); return; }
  }
  char rel[64];
  snprintf(rel, sizeof rel, "sessions/%s", id);
  cJSON_AddStringToObject(o, "session", id);
  cJSON_AddStringToObject(o, "dir", rel);
  if (e.have_unit) cJSON_AddStringToObject(o, "unit", rel);
  else cJSON_AddNullToObject(o, "unit");
  cJSON_AddItemToObject(o, "result", res);
  ok(r, o);
}

bool kf_serve_authorised(kf_serve *s, const char *auth) {
  if (!s->o.token) return true;
  const char *a = auth;
  if (!a || strncasecmp(a, "Bearer ", 7) != 0) return false;
  a += 7;
  size_t n = strlen(a), m = strlen(s->o.token);
  /* the time taken does not say how much of the token matched */
  unsigned char diff = n != m;
  for (size_t i = 0; i < m; i++) diff |= (unsigned char)(a[i < n ? i : 0] ^ s->o.token[i]);
  return diff == 0;
}

int kf_serve_handle(kf_serve *s, const kf_http_req *q, char **out) {
  reply r;
  memset(&r, 0, sizeof r);
  r.status = 404;
  r.why = "no such endpoint (GET /v1/health, /v1/tasks; POST /v1/sessions; docs/AGENT.md)";
  const char *p = q->path;
  bool get = strcmp(q->method, "GET") == 0, post = strcmp(q->method, "POST") == 0,
       del = strcmp(q->method, "DELETE") == 0;
  cJSON *body = NULL;
  if (!kf_serve_authorised(s, q->auth)) {
    fail(&r, 401, "a bearer token is needed (Authorization: Bearer ...)");
    goto done;
  }
  if (post) {
    body = cJSON_ParseWithLength(q->body ? q->body : "", q->body_len);
    if (!cJSON_IsObject(body)) {
      fail(&r, 400, "the body is not a JSON object");
      goto done;
    }
  }
  if (strcmp(p, "/v1/health") == 0) {
    if (get) health(s, &r);
    else fail(&r, 405, "GET /v1/health");
  } else if (strcmp(p, "/v1/tasks") == 0) {
    if (get) tasks(s, &r);
    else fail(&r, 405, "GET /v1/tasks");
  } else if (strcmp(p, "/v1/sessions") == 0) {
    if (post) open_session(s, body, &r);
    else if (get) list_sessions(s, &r);
    else fail(&r, 405, "POST or GET /v1/sessions");
  } else if (strncmp(p, "/v1/sessions/", 13) == 0) {
    char sid[64];
    const char *rest = p + 13, *slash = strchr(rest, '/');
    size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
    if (n == 0 || n >= sizeof sid) {
      failf(&r, 404, "no open session '%s'", "");
      goto done;
    }
    memcpy(sid, rest, n);
    sid[n] = '\0';
    if (!slash) {
      if (get) {
        session_state(s, sid, &r);
      } else if (del) {
        close_session(s, sid, &r);
      } else {
        fail(&r, 405, "GET or DELETE /v1/sessions/SID");
      }
    } else if (strcmp(slash, "/tools") == 0) {
      if (post) call_tool(s, sid, body, &r);
      else fail(&r, 405, "POST /v1/sessions/SID/tools");
    }
  }
done:
  cJSON_Delete(body);
  char *text = NULL;
  if (r.body) {
    text = cJSON_PrintUnformatted(r.body);
    cJSON_Delete(r.body);
    if (!text) {
      r.status = 500;
      r.why = "out of memory";
    }
  }
  if (!text) text = kf_serve_error_body(r.why ? r.why : "error");
  *out = text;
  return text ? r.status : 500;
}
