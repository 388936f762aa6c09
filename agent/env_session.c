/* agent/env_session.c — one session of the kernel environment on one task
 * (kfuse/env_session.h): the tools a policy works through, for `kfuse
 * agent`'s loop (agent_loop.c) and `kfuse serve` (tools/serve*.c) alike.
 *
 * The model's code is untrusted: it is only ever written under OUT_DIR and
 * run by the judge the caller hands the session (kf_env_options.judge:
 * kf_judge_bound_call, with the judge's workers, static checks and
 * limits); file tools read inside the task directory only. A tool call with unusable arguments
 * gets an error observation, never a failure of the session.
 *
 * OUT_DIR/attempts/NNN holds each unit written; OUT_DIR/unit.json +
 * unit.cu the best the judge verified (highest reward, then fastest),
 * replaced through temporary files; OUT_DIR/result.json the outcome; the
 * trajectory one JSON record a line, flushed as it goes. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "kfuse/curl.h"
#include "kfuse/env_session.h"

extern const unsigned char kf_skill_md[];
extern const unsigned long kf_skill_md_len;

/* What one file tool returns at most, and the task files quoted in the
 * first message. */
#define READ_MAX (64 << 10)
#define BRIEF_MAX (16 << 10)

struct kf_env_session {
  char out_dir[PATH_MAX];
  char out_real[PATH_MAX]; /* realpath of out_dir: what unpath hides */
  char task_real[PATH_MAX];
  char task_key[80];
  kf_env_options o;
  FILE *traj;
  char *prompt;
  cJSON *tools;
  kf_env_stats st;
  double t0;
};

void kf_env_options_init(kf_env_options *o) {
  memset(o, 0, sizeof *o);
  o->max_judge = 10;
  o->source = "agent";
}

static char skill_version[32];

static void find_skill_version(void) {
  const char *s = (const char *)kf_skill_md;
  const char *key = "skill-version:";
  size_t n = strlen(key);
  int k = 0;
  if (strncmp(s, key, n) == 0) {
    s += n;
    while (*s == ' ') s++;
    while (k < (int)sizeof skill_version - 1 && s[k] && s[k] != '\n') {
      skill_version[k] = s[k];
      k++;
    }
  }
  if (!k) snprintf(skill_version, sizeof skill_version, "unknown");
  else skill_version[k] = '\0';
}

const char *kf_env_skill_version(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, find_skill_version);
  return skill_version;
}

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static char *fmt_str(const char *fmt, const char *a) {
  size_t n = strlen(fmt) + (a ? strlen(a) : 0) + 1;
  char *d = malloc(n);
  if (d) snprintf(d, n, fmt, a ? a : "");
  return d;
}

/* ---- files ------------------------------------------------------------------------ */

/* The task file rel names, inside task_real (realpath of the task
 * directory): NULL with *why set for anything outside it. */
static char *task_path(const char *task_real, const char *rel, const char **why) {
  if (!rel || !*rel) {
    *why = "give a path relative to the task directory";
    return NULL;
  }
  if (rel[0] == '/' || strstr(rel, "..")) {
    *why = "only files inside the task directory can be read";
    return NULL;
  }
  char joined[PATH_MAX], real[PATH_MAX];
  if (snprintf(joined, sizeof joined, "%s/%s", task_real, rel) >= (int)sizeof joined) {
    *why = "the path is too long";
    return NULL;
  }
  if (!realpath(joined, real)) {
    *why = "no such file in the task directory";
    return NULL;
  }
  size_t n = strlen(task_real);
  if (strncmp(real, task_real, n) != 0 || real[n] != '/') {
    *why = "only files inside the task directory can be read";
    return NULL;
  }
  struct stat st;
  if (stat(real, &st) != 0 || !S_ISREG(st.st_mode)) {
    *why = "not a regular file";
    return NULL;
  }
  return dup_str(real);
}

static char *read_limited(const char *path, size_t max, bool *truncated) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *b = malloc(max + 1);
  size_t n = b ? fread(b, 1, max, f) : 0;
  *truncated = b && n == max && fgetc(f) != EOF;
  fclose(f);
  if (b) b[n] = '\0';
  return b;
}

static kf_status copy_file(const char *from, const char *to, kf_diag *diag) {
  char *t = NULL;
  kf_status st = kf_read_text(from, 64L << 20, &t, diag); /* the unit reader's limit */
  if (st) return st;
  st = kf_write_file_atomic(to, t, strlen(t), diag);
  free(t);
  return st;
}

/* ---- the session's texts ---------------------------------------------------------- */

static cJSON *tool_def(const char *name, const char *desc, const char *params_json) {
  cJSON *t = cJSON_CreateObject(), *f = cJSON_CreateObject();
  cJSON *p = cJSON_Parse(params_json);
  if (!t || !f || !p) {
    cJSON_Delete(t);
    cJSON_Delete(f);
    cJSON_Delete(p);
    return NULL;
  }
  cJSON_AddStringToObject(t, "type", "function");
  cJSON_AddStringToObject(f, "name", name);
  cJSON_AddStringToObject(f, "description", desc);
  cJSON_AddItemToObject(f, "parameters", p);
  cJSON_AddItemToObject(t, "function", f);
  return t;
}

#define N_TOOLS 6

static cJSON *tools(void) {
  cJSON *a = cJSON_CreateArray();
  static const char none[] = "{\"type\": \"object\", \"properties\": {}}";
  cJSON *d[N_TOOLS] = {
      tool_def("list_files", "List the task directory's files.", none),
      tool_def("read_file", "Read one file of the task directory (task.json, group.mlir, model.py, "
               "builtin/unit.json, builtin/unit.cu, ...).",
               "{\"type\": \"object\", \"properties\": {\"path\": {\"type\": \"string\", \"description\": "
               "\"relative to the task directory\"}}, \"required\": [\"path\"]}"),
      tool_def("write_unit", "Write the next candidate unit: unit.cu (device code) and unit.json (the launch "
               "plan, format kfuse-unit version 1, source \"unit.cu\").",
               "{\"type\": \"object\", \"properties\": {\"unit_cu\": {\"type\": \"string\"}, \"unit_json\": "
               "{\"type\": \"string\", \"description\": \"the JSON text\"}}, \"required\": [\"unit_cu\", "
               "\"unit_json\"]}"),
      tool_def("judge", "Compile, verify and time the last unit written; returns the verdict (compile log, "
               "correctness, reward, times, fraction of the floor, reasons).", none),
      tool_def("profile", "Judge the last unit written as judge does (it counts as a judge call) and return each "
               "step's GPU time alone (median ms and share), the whole unit's time, the floor and the fraction of "
               "it, with the verdict's reward and reasons. Only a unit that compiles and verifies is profiled.",
               none),
      tool_def("submit", "End the session. The best unit the judge verified is kept.", none),
  };
  bool ok = a != NULL;
  for (int i = 0; i < N_TOOLS; i++) {
    if (ok && d[i]) cJSON_AddItemToArray(a, d[i]);
    else {
      ok = false;
      cJSON_Delete(d[i]);
    }
  }
  if (!ok) {
    cJSON_Delete(a);
    return NULL;
  }
  return a;
}

/* The first user message: the task's summary and its two main files. */
static char *brief(const char *task_real) {
  kf_strbuf b;
  kf_strbuf_init(&b);
  kf_strbuf_printf(&b, "Write a faster kernel unit for this task. Its directory holds the files below "
                   "(read them with read_file). Here are task.json and group.mlir.\n");
  static const char *const files[] = {"task.json", "group.mlir"};
  for (int i = 0; i < 2; i++) {
    char p[PATH_MAX + 32];
    snprintf(p, sizeof p, "%s/%s", task_real, files[i]);
    bool tr = false;
    char *t = read_limited(p, BRIEF_MAX, &tr);
    kf_strbuf_printf(&b, "\n--- %s%s ---\n%s\n", files[i], tr ? " (first 16 KiB)" : "", t ? t : "(missing)");
    free(t);
  }
  kf_strbuf_printf(&b, "\nStart from builtin/unit.json and builtin/unit.cu if the task has them. "
                   "Judge every candidate; submit when you are done.\n");
  if (b.failed) {
    kf_strbuf_fini(&b);
    return NULL;
  }
  return b.data;
}

/* task.json's key, for joining trajectories with tasks and the cache
 * (the judge reports a task it cannot read) */
static void read_key(const char *task_real, char *key, size_t n) {
  char tj[PATH_MAX + 16];
  snprintf(tj, sizeof tj, "%s/task.json", task_real);
  char *t = NULL;
  kf_strbuf ignored;
  kf_strbuf_init(&ignored);
  kf_diag quiet;
  kf_diag_init(&quiet, kf_diag_to_strbuf, &ignored);
  key[0] = '\0';
  if (kf_read_text(tj, 16 << 20, &t, &quiet) == KF_OK) {
    cJSON *j = cJSON_Parse(t);
    const cJSON *k = j ? cJSON_GetObjectItemCaseSensitive(j, "key") : NULL;
    if (cJSON_IsString(k)) snprintf(key, n, "%s", k->valuestring);
    cJSON_Delete(j);
  }
  free(t);
  kf_strbuf_fini(&ignored);
}

/* ---- the tools -------------------------------------------------------------------- */

static char *obs_list(kf_env_session *S) {
  kf_strbuf b;
  kf_strbuf_init(&b);
  const char *dirs[2] = {"", "builtin"};
  for (int d = 0; d < 2; d++) {
    char p[PATH_MAX + 16];
    snprintf(p, sizeof p, "%s%s%s", S->task_real, dirs[d][0] ? "/" : "", dirs[d]);
    DIR *dir = opendir(p);
    if (!dir) continue;
    struct dirent *e;
    while ((e = readdir(dir))) {
      if (e->d_name[0] == '.') continue;
      char f[PATH_MAX + 512];
      struct stat st;
      snprintf(f, sizeof f, "%s/%s", p, e->d_name);
      if (stat(f, &st) != 0 || !S_ISREG(st.st_mode)) continue;
      kf_strbuf_printf(&b, "%s%s%s (%lld bytes)\n", dirs[d], dirs[d][0] ? "/" : "", e->d_name,
                       (long long)st.st_size);
    }
    closedir(dir);
  }
  if (b.failed) {
    kf_strbuf_fini(&b);
    return NULL;
  }
  return b.data ? b.data : dup_str("(no files)");
}

static char *obs_read(kf_env_session *S, const cJSON *args) {
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(args, "path");
  const char *why = NULL;
  char *path = task_path(S->task_real, cJSON_IsString(p) ? p->valuestring : NULL, &why);
  if (!path) return fmt_str("error: %s", why);
  bool tr = false;
  char *t = read_limited(path, READ_MAX, &tr);
  free(path);
  if (!t) return dup_str("error: the file cannot be read");
  if (!tr) return t;
  char *r = malloc(strlen(t) + 64);
  if (r) sprintf(r, "%s\n[truncated at 64 KiB]", t);
  free(t);
  return r;
}

static char *obs_write(kf_env_session *S, const cJSON *args, kf_diag *diag) {
  const cJSON *cu = cJSON_GetObjectItemCaseSensitive(args, "unit_cu");
  const cJSON *js = cJSON_GetObjectItemCaseSensitive(args, "unit_json");
  if (!cJSON_IsString(cu)) return dup_str("error: unit_cu must be a string (the CUDA source)");
  char *jtext = NULL;
  if (cJSON_IsString(js)) jtext = dup_str(js->valuestring);
  else if (cJSON_IsObject(js)) jtext = cJSON_Print(js);
  else return dup_str("error: unit_json must be the unit.json text");
  if (!jtext) return NULL;
  cJSON *parsed = cJSON_Parse(jtext);
  bool obj = cJSON_IsObject(parsed);
  cJSON_Delete(parsed);
  if (!obj) {
    free(jtext);
    return dup_str("error: unit_json is not a JSON object; nothing was written");
  }
  int n = S->st.attempt + 1;
  char dir[PATH_MAX + 32], p[PATH_MAX + 48];
  snprintf(dir, sizeof dir, "%s/attempts/%03d", S->out_dir, n);
  kf_strbuf msg;
  kf_strbuf_init(&msg);
  kf_diag d;
  kf_diag_init(&d, kf_diag_to_strbuf, &msg);
  kf_status st = mkdir(dir, 0755) == 0 ? KF_OK : KF_ERR_IO;
  if (st) kf_diag_error(&d, "cannot create the attempt directory: %s", strerror(errno));
  if (!st) {
    snprintf(p, sizeof p, "%s/unit.cu", dir);
    st = kf_write_file_atomic(p, cu->valuestring, strlen(cu->valuestring), &d);
  }
  if (!st) {
    snprintf(p, sizeof p, "%s/unit.json", dir);
    st = kf_write_file_atomic(p, jtext, strlen(jtext), &d);
  }
  free(jtext);
  char *r;
  if (st) {
    r = fmt_str("error: %s", msg.data);
    kf_diag_error(diag, "env: %s", msg.data ? msg.data : "cannot write a unit");
  } else {
    S->st.attempt = n;
    S->st.units_written++;
    char t[96];
    snprintf(t, sizeof t, "written as attempt %d; call judge to verify and time it", n);
    r = dup_str(t);
  }
  kf_strbuf_fini(&msg);
  return r;
}

/* Host paths out of what a model or a trainer sees: the session's task
 * and output folders become "<task>" and "<session>" in s (a copy;
 * NULL when out of memory). */
static bool path_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

static char *unpath(const kf_env_session *S, const char *s) {
  /* absolute paths only (realpaths, and out_dir as given when absolute),
   * and only where the path ends (a folder "/a/b" is not "/a/bc") */
  const char *from[3] = {S->task_real, S->out_real, S->out_dir[0] == '/' ? S->out_dir : ""};
  const char *to[3] = {"<task>", "<session>", "<session>"};
  char *cur = strdup(s ? s : "");
  for (int k = 0; cur && k < 3; k++) {
    size_t fl = strlen(from[k]);
    if (fl < 2 || from[k][0] != '/') continue;
    kf_strbuf b = {0};
    const char *p = cur, *q, *scan = cur;
    while ((q = strstr(scan, from[k])) != NULL) {
      if (path_char(q[fl])) { /* a longer name: not this folder */
        scan = q + 1;
        continue;
      }
      kf_strbuf_append(&b, p, (size_t)(q - p));
      kf_strbuf_append(&b, to[k], strlen(to[k]));
      p = scan = q + fl;
    }
    if (p == cur) {
      kf_strbuf_fini(&b);
      continue;
    }
    kf_strbuf_append(&b, p, strlen(p));
    free(cur);
    cur = b.failed ? NULL : b.data;
    if (!cur) kf_strbuf_fini(&b);
  }
  return cur;
}

static void unpath_json(const kf_env_session *S, cJSON *x) {
  for (; x; x = x->next) {
    if (cJSON_IsString(x) && x->valuestring) {
      char *u = unpath(S, x->valuestring);
      if (u && strcmp(u, x->valuestring) != 0) cJSON_SetValuestring(x, u);
      free(u);
    }
    if (x->child) unpath_json(S, x->child);
  }
}

/* The verdict without what the model needs not see (paths, the worker's
 * bookkeeping); compile logs and worker output cut to 4 KiB. */
static cJSON *verdict_view(const cJSON *v) {
  static const char *const keep[] = {"judged", "why", "compiled", "compile_log", "correct", "reward", "reasons",
                                     "candidate", "builtin", "tolerance", "floor", "baselines", "profile",
                                     "device"};
  cJSON *o = cJSON_CreateObject();
  for (size_t i = 0; o && i < sizeof keep / sizeof keep[0]; i++) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(v, keep[i]);
    if (!x) continue;
    cJSON *c = cJSON_Duplicate(x, 1);
    if (c && cJSON_IsString(c) && strlen(c->valuestring) > 4096) {
      c->valuestring[4096] = '\0';
    }
    if (c) cJSON_AddItemToObject(o, keep[i], c);
  }
  return o;
}

/* The best verified unit so far: the one in dir, if vj says it beats the
 * one kept. */
static void keep_best(kf_env_session *S, const char *dir, const cJSON *vj, kf_diag *diag) {
  const cJSON *correct = cJSON_GetObjectItemCaseSensitive(vj, "correct");
  const cJSON *reward = cJSON_GetObjectItemCaseSensitive(vj, "reward");
  const cJSON *cand = cJSON_GetObjectItemCaseSensitive(vj, "candidate");
  const cJSON *ms = cJSON_IsObject(cand) ? cJSON_GetObjectItemCaseSensitive(cand, "ms") : NULL;
  const cJSON *fl = cJSON_GetObjectItemCaseSensitive(vj, "floor");
  const cJSON *fr = cJSON_IsObject(fl) ? cJSON_GetObjectItemCaseSensitive(fl, "fraction") : NULL;
  if (!cJSON_IsTrue(correct) || !cJSON_IsNumber(reward)) return;
  int rw = (int)reward->valuedouble;
  double m = cJSON_IsNumber(ms) ? ms->valuedouble : -1;
  kf_env_stats *R = &S->st;
  bool better = !R->have_unit || rw > R->best_reward ||
                (rw == R->best_reward && m >= 0 && (R->best_ms < 0 || m < R->best_ms));
  if (!better) return;
  char from[PATH_MAX + 48], to[PATH_MAX + 48];
  snprintf(from, sizeof from, "%s/unit.cu", dir);
  snprintf(to, sizeof to, "%s/unit.cu", S->out_dir);
  kf_status cs = copy_file(from, to, diag);
  snprintf(from, sizeof from, "%s/unit.json", dir);
  snprintf(to, sizeof to, "%s/unit.json", S->out_dir);
  if (!cs) cs = copy_file(from, to, diag);
  if (cs) return;
  R->have_unit = true;
  R->best_reward = rw;
  R->best_ms = m;
  R->best_fraction = cJSON_IsNumber(fr) ? fr->valuedouble : -1;
}

/* The profile tool's observation: the verdict's "profile" (each step's
 * median alone) with the floor, the outcome and the reasons; or, for a
 * unit the judge did not run on a GPU, why not */
static char *profile_text(const cJSON *vj) {
  const cJSON *judged = cJSON_GetObjectItemCaseSensitive(vj, "judged");
  const cJSON *compiled = cJSON_GetObjectItemCaseSensitive(vj, "compiled");
  const cJSON *why = cJSON_GetObjectItemCaseSensitive(vj, "why");
  const cJSON *prof = cJSON_GetObjectItemCaseSensitive(vj, "profile");
  cJSON *o = cJSON_IsObject(prof) ? cJSON_Duplicate(prof, 1) : cJSON_CreateObject();
  if (!o) return NULL;
  if (!cJSON_IsObject(prof)) {
    char w[600];
    snprintf(w, sizeof w, "not available: %s",
             cJSON_IsFalse(judged) ? (cJSON_IsString(why) ? why->valuestring : "the unit was not judged")
             : cJSON_IsFalse(compiled) ? "the unit did not compile (only a unit that compiles is profiled); see reasons"
                                       : "the judge gave no profile");
    cJSON_AddBoolToObject(o, "available", false);
    cJSON_AddStringToObject(o, "why", w);
  } else {
    cJSON *w = cJSON_GetObjectItemCaseSensitive(o, "why");
    if (cJSON_IsString(w)) {
      char t[600];
      snprintf(t, sizeof t, "not available: %s", w->valuestring);
      cJSON_ReplaceItemInObjectCaseSensitive(o, "why", cJSON_CreateString(t));
    }
    const cJSON *fl = cJSON_GetObjectItemCaseSensitive(vj, "floor");
    const cJSON *fms = cJSON_IsObject(fl) ? cJSON_GetObjectItemCaseSensitive(fl, "ms") : NULL;
    const cJSON *ffr = cJSON_IsObject(fl) ? cJSON_GetObjectItemCaseSensitive(fl, "fraction") : NULL;
    if (fms) cJSON_AddItemToObject(o, "floor_ms", cJSON_Duplicate(fms, 1));
    if (ffr) cJSON_AddItemToObject(o, "floor_fraction", cJSON_Duplicate(ffr, 1));
  }
  static const char *const outcome[] = {"correct", "reward", "reasons", "compile_log", "device"};
  for (size_t i = 0; i < sizeof outcome / sizeof outcome[0]; i++) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(vj, outcome[i]);
    cJSON *c = x ? cJSON_Duplicate(x, 1) : NULL;
    if (c && cJSON_IsString(c) && strlen(c->valuestring) > 4096) c->valuestring[4096] = '\0';
    if (c) cJSON_AddItemToObject(o, outcome[i], c);
  }
  char *t = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return t;
}

/* The judge on the last unit written (with each step timed alone when
 * prof: the profile tool): the observation; the full verdict (for the
 * trajectory) in *full, the model's view in step. */
static char *obs_judge(kf_env_session *S, bool prof, cJSON **full, kf_env_step *step, kf_diag *diag) {
  *full = NULL;
  if (!S->st.attempt) return dup_str("error: no unit written yet (write_unit first)");
  if (S->o.max_judge > 0 && S->st.judge_calls >= S->o.max_judge)
    return dup_str("error: the judge budget of this session is spent; submit");
  char dir[PATH_MAX + 32];
  snprintf(dir, sizeof dir, "%s/attempts/%03d", S->out_dir, S->st.attempt);
  kf_strbuf v, msg;
  kf_strbuf_init(&v);
  kf_strbuf_init(&msg);
  kf_diag d;
  kf_diag_init(&d, kf_diag_to_strbuf, &msg);
  double t = kf_now_s();
  kf_status st = S->o.judge(S->o.judge_user, S->task_real, dir, prof, &v, &d);
  S->st.judge_seconds += kf_now_s() - t;
  S->st.judge_calls++;
  cJSON *vj = v.data ? cJSON_Parse(v.data) : NULL;
  char *r = NULL;
  if (!vj) {
    char *m = unpath(S, msg.data ? msg.data : kf_status_str(st));
    r = fmt_str("error: the judge gave no verdict: %s", m ? m : "");
    free(m);
  } else {
    if (vj->child) unpath_json(S, vj->child); /* the trajectory's copy too */
    cJSON *view = verdict_view(vj);
    r = !view ? NULL : prof ? profile_text(vj) : cJSON_PrintUnformatted(view);
    const cJSON *judged = cJSON_GetObjectItemCaseSensitive(vj, "judged");
    const cJSON *reward = cJSON_GetObjectItemCaseSensitive(vj, "reward");
    if (!cJSON_IsFalse(judged) && cJSON_IsNumber(reward)) {
      step->judged = true;
      step->reward = (int)reward->valuedouble;
    }
    step->verdict = view;
    keep_best(S, dir, vj, diag);
    *full = vj;
  }
  kf_strbuf_fini(&v);
  kf_strbuf_fini(&msg);
  return r;
}

/* ---- the session ------------------------------------------------------------------ */

void kf_env_session_record(kf_env_session *S, cJSON *r, kf_diag *diag) {
  if (!r) return;
  char *s = cJSON_PrintUnformatted(r);
  cJSON_Delete(r);
  if (!s) return;
  if (S->traj && (fputs(s, S->traj) == EOF || fputc('\n', S->traj) == EOF || fflush(S->traj) != 0)) {
    kf_diag_warn(diag, "the trajectory could not be written: %s", strerror(errno));
    fclose(S->traj);
    S->traj = NULL;
  }
  free(s);
}

void kf_env_step_fini(kf_env_step *s) {
  if (!s) return;
  free(s->observation);
  cJSON_Delete(s->verdict);
  memset(s, 0, sizeof *s);
}

kf_status kf_env_session_call(kf_env_session *S, const char *id, const char *name, const char *arguments,
                              const cJSON *args, const char *args_error, int turn, kf_env_step *step,
                              kf_diag *diag) {
  memset(step, 0, sizeof *step);
  if (!name) name = "";
  S->st.tool_calls++;
  char *obs = NULL;
  cJSON *verdict = NULL;
  if (!args_error && !cJSON_IsObject(args)) args_error = "the arguments are not a JSON object";
  if (args_error) obs = fmt_str("error: %s; call the tool again with a JSON object of arguments", args_error);
  else if (strcmp(name, "list_files") == 0) obs = obs_list(S);
  else if (strcmp(name, "read_file") == 0) obs = obs_read(S, args);
  else if (strcmp(name, "write_unit") == 0) obs = obs_write(S, args, diag);
  else if (strcmp(name, "judge") == 0) obs = obs_judge(S, false, &verdict, step, diag);
  else if (strcmp(name, "profile") == 0) obs = obs_judge(S, true, &verdict, step, diag);
  else if (strcmp(name, "submit") == 0) {
    S->st.submitted = true;
    step->done = true;
    obs = dup_str(S->st.have_unit ? "submitted; the best verified unit is kept"
                                  : "submitted; no unit was verified, the built-in unit stays");
  } else {
    obs = fmt_str("error: no tool named '%s' (list_files, read_file, write_unit, judge, profile, submit)", name);
  }
  if (!obs) {
    cJSON_Delete(verdict);
    kf_env_step_fini(step);
    return KF_ERR_NOMEM;
  }
  cJSON *r = cJSON_CreateObject();
  if (r) {
    cJSON_AddStringToObject(r, "type", "tool");
    if (turn) cJSON_AddNumberToObject(r, "turn", turn);
    if (id) cJSON_AddStringToObject(r, "id", id);
    cJSON_AddStringToObject(r, "name", name);
    if (arguments) cJSON_AddStringToObject(r, "arguments", arguments);
    if (args_error) cJSON_AddStringToObject(r, "args_error", args_error);
    cJSON_AddStringToObject(r, "observation", obs);
    if (verdict) {
      /* the step's reward at the top, null when the unit was not judged
       * (no GPU, a task that cannot be read): never mistaken for a -1 */
      const cJSON *jd = cJSON_GetObjectItemCaseSensitive(verdict, "judged");
      const cJSON *rw = cJSON_GetObjectItemCaseSensitive(verdict, "reward");
      bool judged = cJSON_IsTrue(jd) && cJSON_IsNumber(rw);
      cJSON_AddBoolToObject(r, "judged", judged);
      if (judged) cJSON_AddNumberToObject(r, "reward", rw->valuedouble);
      else cJSON_AddNullToObject(r, "reward");
      cJSON_AddItemToObject(r, "verdict", verdict);
      verdict = NULL;
    }
    if (S->st.attempt) cJSON_AddNumberToObject(r, "attempt", S->st.attempt);
  }
  kf_env_session_record(S, r, diag);
  cJSON_Delete(verdict);
  step->observation = obs;
  return KF_OK;
}

kf_status kf_env_session_open(const char *task_dir, const char *out_dir, const kf_env_options *o,
                              kf_env_session **out, kf_diag *diag) {
  *out = NULL;
  if (!task_dir || !out_dir || !o || !o->judge) {
    kf_diag_error(diag, "env: a task directory, an output directory and a judge are needed");
    return KF_ERR_ARG;
  }
  const char *who = o->source ? o->source : "env";
  kf_env_session *S = calloc(1, sizeof *S);
  if (!S) return KF_ERR_NOMEM;
  kf_status st = KF_OK;
  S->o = *o;
  S->t0 = kf_now_s();
  S->st.best_reward = -2;
  S->st.best_ms = S->st.best_fraction = -1;
  char tj[PATH_MAX + 16], ad[PATH_MAX + 16], tp[PATH_MAX + 32];
  snprintf(tj, sizeof tj, "%s/task.json", task_dir);
  struct stat st0;
  if (snprintf(S->out_dir, sizeof S->out_dir, "%s", out_dir) >= (int)sizeof S->out_dir) {
    kf_diag_error(diag, "%s: the output directory's path is too long", who);
    st = KF_ERR_ARG;
    goto fail;
  }
  if (!realpath(task_dir, S->task_real) || stat(tj, &st0) != 0) {
    kf_diag_error(diag, "%s: %s is not a task directory (no task.json; kfuse task writes them)", who, task_dir);
    st = KF_ERR_IO;
    goto fail;
  }
  if (mkdir(out_dir, 0755) != 0) {
    kf_diag_error(diag, "%s: cannot create %s: %s%s", who, out_dir, strerror(errno),
                  errno == EEXIST ? " (it must not exist)" : "");
    st = KF_ERR_IO;
    goto fail;
  }
  if (!realpath(out_dir, S->out_real)) S->out_real[0] = '\0';
  snprintf(ad, sizeof ad, "%s/attempts", out_dir);
  if (mkdir(ad, 0755) != 0) {
    kf_diag_error(diag, "%s: cannot create %s: %s", who, ad, strerror(errno));
    st = KF_ERR_IO;
    goto fail;
  }
  if (o->trajectory) snprintf(tp, sizeof tp, "%s", o->trajectory);
  else snprintf(tp, sizeof tp, "%s/trajectory.jsonl", out_dir);
  /* never over an existing file ('x'), not inherited by the judge's
   * workers ('e') */
  S->traj = fopen(tp, "wxe");
  if (!S->traj) {
    kf_diag_error(diag, "%s: %s: cannot write the trajectory: %s%s", who, tp, strerror(errno),
                  errno == EEXIST ? " (a trajectory is never overwritten: name a new file)" : "");
    st = KF_ERR_IO;
    goto fail;
  }
  /* the caller's strings need not outlive the call */
  S->o.trajectory = NULL;
  S->o.model = S->o.endpoint = NULL;
  S->o.budget = NULL;
  S->o.request = NULL;
  S->tools = tools();
  S->prompt = brief(S->task_real);
  if (!S->tools || !S->prompt) {
    st = KF_ERR_NOMEM;
    goto fail;
  }
  read_key(S->task_real, S->task_key, sizeof S->task_key);
  cJSON *r = cJSON_CreateObject();
  cJSON *msgs = cJSON_CreateArray(), *m0 = cJSON_CreateObject(), *m1 = cJSON_CreateObject();
  if (!r || !msgs || !m0 || !m1) {
    cJSON_Delete(r);
    cJSON_Delete(msgs);
    cJSON_Delete(m0);
    cJSON_Delete(m1);
    st = KF_ERR_NOMEM;
    goto fail;
  }
  cJSON_AddStringToObject(m0, "role", "system");
  cJSON_AddStringToObject(m0, "content", (const char *)kf_skill_md);
  cJSON_AddItemToArray(msgs, m0);
  cJSON_AddStringToObject(m1, "role", "user");
  cJSON_AddStringToObject(m1, "content", S->prompt);
  cJSON_AddItemToArray(msgs, m1);
  cJSON_AddStringToObject(r, "type", "start");
  cJSON_AddStringToObject(r, "format", "kfuse-trajectory-v1");
  cJSON_AddStringToObject(r, "source", o->source ? o->source : "");
  const char *base = strrchr(S->task_real, '/');
  cJSON_AddStringToObject(r, "task", base && base[1] ? base + 1 : S->task_real); /* its name, not the host's path */
  if (S->task_key[0]) cJSON_AddStringToObject(r, "task_key", S->task_key);
  cJSON_AddStringToObject(r, "model", o->model ? o->model : "");
  char shown[1024]; /* no credentials or query in a trajectory */
  kf_url_shown(o->endpoint ? o->endpoint : "", shown, sizeof shown);
  cJSON_AddStringToObject(r, "endpoint", shown);
  cJSON_AddStringToObject(r, "skill_version", kf_env_skill_version());
  if (o->request) cJSON_AddItemToObject(r, "request", cJSON_Duplicate(o->request, 1));
  if (o->budget) {
    cJSON_AddItemToObject(r, "budget", cJSON_Duplicate(o->budget, 1));
  } else {
    cJSON *b = cJSON_AddObjectToObject(r, "budget");
    if (b) cJSON_AddNumberToObject(b, "judge_calls", o->max_judge);
  }
  cJSON_AddItemToObject(r, "messages", msgs);
  cJSON_AddItemToObject(r, "tools", cJSON_Duplicate(S->tools, 1));
  kf_env_session_record(S, r, diag);
  *out = S;
  return KF_OK;
fail:
  kf_env_session_destroy(S);
  return st;
}

void kf_env_session_destroy(kf_env_session *S) {
  if (!S) return;
  if (S->traj) fclose(S->traj);
  free(S->prompt);
  cJSON_Delete(S->tools);
  free(S);
}

const char *kf_env_session_system(const kf_env_session *S) {
  (void)S;
  return (const char *)kf_skill_md;
}

const char *kf_env_session_prompt(const kf_env_session *S) { return S->prompt; }

const cJSON *kf_env_session_tools(const kf_env_session *S) { return S->tools; }

const char *kf_env_session_task_key(const kf_env_session *S) { return S->task_key; }

void kf_env_session_stats(const kf_env_session *S, kf_env_stats *st) {
  *st = S->st;
  st->seconds = kf_now_s() - S->t0;
}

cJSON *kf_env_session_result(const kf_env_session *S, const char *stop) {
  cJSON *r = cJSON_CreateObject();
  if (!r) return NULL;
  const kf_env_stats *R = &S->st;
  cJSON_AddStringToObject(r, "stop", stop ? stop : "");
  cJSON_AddBoolToObject(r, "have_unit", R->have_unit);
  if (R->have_unit) {
    cJSON_AddNumberToObject(r, "best_reward", R->best_reward);
    cJSON_AddNumberToObject(r, "best_ms", R->best_ms);
    cJSON_AddNumberToObject(r, "best_fraction", R->best_fraction);
  }
  cJSON_AddNumberToObject(r, "tool_calls", R->tool_calls);
  cJSON_AddNumberToObject(r, "units_written", R->units_written);
  cJSON_AddNumberToObject(r, "judge_calls", R->judge_calls);
  cJSON_AddNumberToObject(r, "seconds", kf_now_s() - S->t0);
  cJSON_AddNumberToObject(r, "judge_seconds", R->judge_seconds);
  return r;
}

kf_status kf_env_session_end(kf_env_session *S, cJSON *r, kf_diag *diag) {
  if (!r) return KF_ERR_NOMEM;
  kf_status st = KF_ERR_NOMEM;
  char *s = cJSON_Print(r);
  if (s) {
    char p[PATH_MAX + 16];
    snprintf(p, sizeof p, "%s/result.json", S->out_dir);
    st = kf_write_file_atomic(p, s, strlen(s), diag);
    if (st) kf_diag_warn(diag, "result.json not written");
    free(s);
  }
  cJSON *e = cJSON_CreateObject();
  if (e) {
    cJSON_AddStringToObject(e, "type", "end");
    for (cJSON *c = r->child; c; c = c->next) cJSON_AddItemToObject(e, c->string, cJSON_Duplicate(c, 1));
  }
  cJSON_Delete(r);
  kf_env_session_record(S, e, diag);
  return st;
}
