/* judge/agent_loop.c — the LLM kernel agent's loop over one task
 * (kfuse/agent_loop.h; docs/AGENT.md, "The agent loop").
 *
 * A ReAct loop: the conversation (system: agent/SKILL.md; user: the task's
 * summary) goes to the model with the tool definitions; each tool call in
 * the reply runs here and its observation goes back as a tool message.
 * The model's code is untrusted: it is only ever written under OUT_DIR and
 * run by the judge (its workers, its static checks, its limits); file
 * tools read inside the task directory only. A tool call with unusable
 * arguments gets an error observation, never a failure of the session.
 *
 * OUT_DIR/attempts/NNN holds each unit written; OUT_DIR/unit.json +
 * unit.cu the best the judge verified (highest reward, then fastest),
 * replaced through temporary files; OUT_DIR/result.json the outcome; the
 * trajectory one JSON record a line, flushed as it goes. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "kfuse/agent_loop.h"

extern const unsigned char kf_skill_md[];
extern const unsigned long kf_skill_md_len;

/* What one file tool returns at most, and the task files quoted in the
 * first message. */
#define READ_MAX (64 << 10)
#define BRIEF_MAX (16 << 10)

void kf_agent_options_init(kf_agent_options *o) {
  memset(o, 0, sizeof *o);
  kf_llm_config_init(&o->llm);
  o->max_turns = 20;
  o->max_judge = 10;
  o->context_chars = 400000;
  kf_judge_options_init(&o->judge);
}

const char *kf_agent_skill_version(void) {
  static char v[32];
  if (!v[0]) {
    const char *s = (const char *)kf_skill_md;
    const char *key = "skill-version:";
    size_t n = strlen(key);
    int k = 0;
    if (strncmp(s, key, n) == 0) {
      s += n;
      while (*s == ' ') s++;
      while (k < (int)sizeof v - 1 && s[k] && s[k] != '\n') {
        v[k] = s[k];
        k++;
      }
    }
    if (!k) snprintf(v, sizeof v, "unknown");
    else v[k] = '\0';
  }
  return v;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void to_buf(void *user, kf_diag_level level, const char *msg) {
  kf_strbuf *b = user;
  kf_strbuf_printf(b, "%s%s\n", level == KF_DIAG_ERROR ? "error: " : level == KF_DIAG_WARNING ? "warning: " : "note: ",
                   msg);
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

/* ---- the session ------------------------------------------------------------------ */

typedef struct sess {
  const char *task_dir, *out_dir;
  char task_real[PATH_MAX];
  const kf_agent_options *o;
  kf_agent_result *res;
  kf_diag *diag;
  FILE *traj;
  cJSON *messages;
  int attempt;         /* last unit written (0: none) */
  double t0;
  bool submitted;
  int turn;
} sess;

static void record(sess *S, cJSON *r) {
  if (!r) return;
  char *s = cJSON_PrintUnformatted(r);
  cJSON_Delete(r);
  if (!s) return;
  if (S->traj && (fputs(s, S->traj) == EOF || fputc('\n', S->traj) == EOF || fflush(S->traj) != 0)) {
    kf_diag_warn(S->diag, "the trajectory could not be written: %s", strerror(errno));
    fclose(S->traj);
    S->traj = NULL;
  }
  free(s);
}

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

static cJSON *tools(void) {
  cJSON *a = cJSON_CreateArray();
  static const char none[] = "{\"type\": \"object\", \"properties\": {}}";
  cJSON *d[5] = {
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
      tool_def("submit", "End the session. The best unit the judge verified is kept.", none),
  };
  bool ok = a != NULL;
  for (int i = 0; i < 5; i++) {
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

static kf_status add_message(sess *S, const char *role, const char *content, const char *tool_call_id) {
  cJSON *m = cJSON_CreateObject();
  if (!m || !cJSON_AddStringToObject(m, "role", role) || !cJSON_AddStringToObject(m, "content", content) ||
      (tool_call_id && !cJSON_AddStringToObject(m, "tool_call_id", tool_call_id))) {
    cJSON_Delete(m);
    return KF_ERR_NOMEM;
  }
  cJSON_AddItemToArray(S->messages, m);
  return KF_OK;
}

/* The first user message: the task's summary and its two main files. */
static char *brief(sess *S) {
  kf_strbuf b;
  kf_strbuf_init(&b);
  kf_strbuf_printf(&b, "Write a faster kernel unit for this task. Its directory holds the files below "
                   "(read them with read_file). Here are task.json and group.mlir.\n");
  static const char *const files[] = {"task.json", "group.mlir"};
  for (int i = 0; i < 2; i++) {
    char p[PATH_MAX + 32];
    snprintf(p, sizeof p, "%s/%s", S->task_real, files[i]);
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

static char *obs_list(sess *S) {
  kf_strbuf b;
  kf_strbuf_init(&b);
  const char *dirs[2] = {"", "builtin"};
  for (int d = 0; d < 2; d++) {
    char p[PATH_MAX];
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

static char *obs_read(sess *S, const cJSON *args) {
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

static char *obs_write(sess *S, const cJSON *args) {
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
  int n = S->attempt + 1;
  char dir[PATH_MAX], p[PATH_MAX + 16];
  snprintf(dir, sizeof dir, "%s/attempts/%03d", S->out_dir, n);
  kf_strbuf msg;
  kf_strbuf_init(&msg);
  kf_diag d;
  kf_diag_init(&d, to_buf, &msg);
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
    kf_diag_error(S->diag, "agent: %s", msg.data ? msg.data : "cannot write a unit");
  } else {
    S->attempt = n;
    S->res->units_written++;
    char t[96];
    snprintf(t, sizeof t, "written as attempt %d; call judge to verify and time it", n);
    r = dup_str(t);
  }
  kf_strbuf_fini(&msg);
  return r;
}

static kf_status copy_file(const char *from, const char *to, kf_diag *diag) {
  char *t = NULL;
  kf_status st = kf_read_text(from, 64L << 20, &t, diag); /* the unit reader's limit */
  if (st) return st;
  st = kf_write_file_atomic(to, t, strlen(t), diag);
  free(t);
  return st;
}

/* The verdict without what the model needs not see (paths, the worker's
 * bookkeeping); compile logs and worker output cut to 4 KiB. */
static cJSON *verdict_view(const cJSON *v) {
  static const char *const keep[] = {"judged", "why", "compiled", "compile_log", "correct", "reward", "reasons",
                                     "candidate", "builtin", "tolerance", "floor", "baselines", "device"};
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

static char *obs_judge(sess *S, cJSON **verdict_out) {
  *verdict_out = NULL;
  if (!S->attempt) return dup_str("error: no unit written yet (write_unit first)");
  if (S->o->max_judge > 0 && S->res->judge_calls >= S->o->max_judge)
    return dup_str("error: the judge budget of this session is spent; submit");
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/attempts/%03d", S->out_dir, S->attempt);
  kf_strbuf v, msg;
  kf_strbuf_init(&v);
  kf_strbuf_init(&msg);
  kf_diag d;
  kf_diag_init(&d, to_buf, &msg);
  double t = now_s();
  kf_status st = kf_judge_unit(S->task_real, dir, &S->o->judge, &v, &d);
  S->res->judge_seconds += now_s() - t;
  S->res->judge_calls++;
  cJSON *vj = v.data ? cJSON_Parse(v.data) : NULL;
  char *r = NULL;
  if (!vj) {
    r = fmt_str("error: the judge gave no verdict: %s", msg.data ? msg.data : kf_status_str(st));
  } else {
    cJSON *view = verdict_view(vj);
    r = view ? cJSON_PrintUnformatted(view) : NULL;
    cJSON_Delete(view);
    /* the best verified unit so far */
    const cJSON *correct = cJSON_GetObjectItemCaseSensitive(vj, "correct");
    const cJSON *reward = cJSON_GetObjectItemCaseSensitive(vj, "reward");
    const cJSON *cand = cJSON_GetObjectItemCaseSensitive(vj, "candidate");
    const cJSON *ms = cJSON_IsObject(cand) ? cJSON_GetObjectItemCaseSensitive(cand, "ms") : NULL;
    const cJSON *fl = cJSON_GetObjectItemCaseSensitive(vj, "floor");
    const cJSON *fr = cJSON_IsObject(fl) ? cJSON_GetObjectItemCaseSensitive(fl, "fraction") : NULL;
    if (cJSON_IsTrue(correct) && cJSON_IsNumber(reward)) {
      int rw = (int)reward->valuedouble;
      double m = cJSON_IsNumber(ms) ? ms->valuedouble : -1;
      kf_agent_result *R = S->res;
      bool better = !R->have_unit || rw > R->best_reward ||
                    (rw == R->best_reward && m >= 0 && (R->best_ms < 0 || m < R->best_ms));
      if (better) {
        char from[PATH_MAX + 16], to[PATH_MAX + 16];
        snprintf(from, sizeof from, "%s/unit.cu", dir);
        snprintf(to, sizeof to, "%s/unit.cu", S->out_dir);
        kf_status cs = copy_file(from, to, S->diag);
        snprintf(from, sizeof from, "%s/unit.json", dir);
        snprintf(to, sizeof to, "%s/unit.json", S->out_dir);
        if (!cs) cs = copy_file(from, to, S->diag);
        if (!cs) {
          R->have_unit = true;
          R->best_reward = rw;
          R->best_ms = m;
          R->best_fraction = cJSON_IsNumber(fr) ? fr->valuedouble : -1;
        }
      }
    }
    *verdict_out = vj;
  }
  kf_strbuf_fini(&v);
  kf_strbuf_fini(&msg);
  return r;
}

/* Older tool observations give way (all but the last four) while the
 * conversation is over the context budget. */
static void trim(sess *S) {
  int64_t total = 0;
  int n = cJSON_GetArraySize(S->messages), tools_seen = 0;
  for (int i = 0; i < n; i++) {
    char *s = cJSON_PrintUnformatted(cJSON_GetArrayItem(S->messages, i));
    total += s ? (int64_t)strlen(s) : 0;
    free(s);
  }
  for (int i = n - 1; i >= 0 && total > S->o->context_chars; i--) {
    cJSON *m = cJSON_GetArrayItem(S->messages, i);
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
    if (!cJSON_IsString(role) || strcmp(role->valuestring, "tool") != 0) continue;
    if (++tools_seen <= 4) continue;
    cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
    if (!cJSON_IsString(c) || strncmp(c->valuestring, "[trimmed", 8) == 0) continue;
    size_t len = strlen(c->valuestring);
    char t[96];
    snprintf(t, sizeof t, "[trimmed: %zu bytes of an older observation]", len);
    cJSON_ReplaceItemInObjectCaseSensitive(m, "content", cJSON_CreateString(t));
    total -= (int64_t)len - (int64_t)strlen(t);
  }
}

static bool over_budget(sess *S) {
  const kf_agent_options *o = S->o;
  kf_agent_result *R = S->res;
  if (S->turn >= o->max_turns) snprintf(R->stop, sizeof R->stop, "the turn budget (%d) is spent", o->max_turns);
  else if (o->max_tokens > 0 && R->prompt_tokens + R->completion_tokens >= o->max_tokens)
    snprintf(R->stop, sizeof R->stop, "the token budget (%lld) is spent", (long long)o->max_tokens);
  else if (o->max_seconds > 0 && now_s() - S->t0 >= o->max_seconds)
    snprintf(R->stop, sizeof R->stop, "the time budget (%.0f s) is spent", o->max_seconds);
  else if (o->target_fraction > 0 && R->have_unit && R->best_fraction >= o->target_fraction)
    snprintf(R->stop, sizeof R->stop, "a verified unit reached %.2f of the floor", R->best_fraction);
  else
    return false;
  return true;
}

static kf_status one_call(sess *S, const kf_llm_tool_call *c) {
  S->res->tool_calls++;
  char *obs = NULL;
  cJSON *verdict = NULL;
  if (c->args_error) obs = fmt_str("error: %s; call the tool again with a JSON object of arguments",
                                    c->args_error);
  else if (strcmp(c->name, "list_files") == 0) obs = obs_list(S);
  else if (strcmp(c->name, "read_file") == 0) obs = obs_read(S, c->args);
  else if (strcmp(c->name, "write_unit") == 0) obs = obs_write(S, c->args);
  else if (strcmp(c->name, "judge") == 0) obs = obs_judge(S, &verdict);
  else if (strcmp(c->name, "submit") == 0) {
    S->submitted = true;
    obs = dup_str(S->res->have_unit ? "submitted; the best verified unit is kept"
                                    : "submitted; no unit was verified, the built-in unit stays");
  } else {
    obs = fmt_str("error: no tool named '%s' (list_files, read_file, write_unit, judge, submit)", c->name);
  }
  if (!obs) {
    cJSON_Delete(verdict);
    return KF_ERR_NOMEM;
  }
  kf_status st = add_message(S, "tool", obs, c->id);
  cJSON *r = cJSON_CreateObject();
  if (r) {
    cJSON_AddStringToObject(r, "type", "tool");
    cJSON_AddNumberToObject(r, "turn", S->turn);
    cJSON_AddStringToObject(r, "id", c->id);
    cJSON_AddStringToObject(r, "name", c->name);
    if (c->arguments) cJSON_AddStringToObject(r, "arguments", c->arguments);
    if (c->args_error) cJSON_AddStringToObject(r, "args_error", c->args_error);
    cJSON_AddStringToObject(r, "observation", obs);
    if (verdict) {
      cJSON_AddItemToObject(r, "verdict", verdict);
      verdict = NULL;
    }
    if (S->attempt) cJSON_AddNumberToObject(r, "attempt", S->attempt);
  }
  record(S, r);
  cJSON_Delete(verdict);
  free(obs);
  return st;
}

static void write_result(sess *S) {
  kf_agent_result *R = S->res;
  cJSON *r = cJSON_CreateObject();
  if (!r) return;
  cJSON_AddStringToObject(r, "type", "end");
  cJSON_AddStringToObject(r, "stop", R->stop);
  cJSON_AddBoolToObject(r, "have_unit", R->have_unit);
  if (R->have_unit) {
    cJSON_AddNumberToObject(r, "best_reward", R->best_reward);
    cJSON_AddNumberToObject(r, "best_ms", R->best_ms);
    cJSON_AddNumberToObject(r, "best_fraction", R->best_fraction);
  }
  cJSON_AddNumberToObject(r, "turns", R->turns);
  cJSON_AddNumberToObject(r, "tool_calls", R->tool_calls);
  cJSON_AddNumberToObject(r, "units_written", R->units_written);
  cJSON_AddNumberToObject(r, "judge_calls", R->judge_calls);
  cJSON_AddNumberToObject(r, "prompt_tokens", (double)R->prompt_tokens);
  cJSON_AddNumberToObject(r, "completion_tokens", (double)R->completion_tokens);
  cJSON_AddNumberToObject(r, "seconds", R->seconds);
  cJSON_AddNumberToObject(r, "model_seconds", R->model_seconds);
  cJSON_AddNumberToObject(r, "judge_seconds", R->judge_seconds);
  char *s = cJSON_Print(r);
  if (s) {
    char p[PATH_MAX + 16];
    snprintf(p, sizeof p, "%s/result.json", S->out_dir);
    if (kf_write_file_atomic(p, s, strlen(s), S->diag) != KF_OK) kf_diag_warn(S->diag, "result.json not written");
    free(s);
  }
  record(S, r);
}

kf_status kf_agent_run(const char *task_dir, const char *out_dir, const kf_agent_options *o, kf_agent_result *res,
                       kf_diag *diag) {
  memset(res, 0, sizeof *res);
  res->best_reward = -2;
  res->best_ms = res->best_fraction = -1;
  sess S;
  memset(&S, 0, sizeof S);
  S.task_dir = task_dir;
  S.out_dir = out_dir;
  S.o = o;
  S.res = res;
  S.diag = diag;
  S.t0 = now_s();
  if (!task_dir || !out_dir || o->max_turns < 1) {
    kf_diag_error(diag, "agent: a task directory, an output directory and at least one turn are needed");
    return KF_ERR_ARG;
  }
  char tj[PATH_MAX];
  snprintf(tj, sizeof tj, "%s/task.json", task_dir);
  struct stat st0;
  if (!realpath(task_dir, S.task_real) || stat(tj, &st0) != 0) {
    kf_diag_error(diag, "agent: %s is not a task directory (no task.json; kfuse task writes them)", task_dir);
    return KF_ERR_IO;
  }
  char ad[PATH_MAX];
  snprintf(ad, sizeof ad, "%s/attempts", out_dir);
  if (mkdir(out_dir, 0755) != 0) {
    kf_diag_error(diag, "agent: cannot create %s: %s%s", out_dir, strerror(errno),
                  errno == EEXIST ? " (it must not exist)" : "");
    return KF_ERR_IO;
  }
  if (mkdir(ad, 0755) != 0) {
    kf_diag_error(diag, "agent: cannot create %s: %s", ad, strerror(errno));
    return KF_ERR_IO;
  }
  char tp[PATH_MAX + 32];
  if (o->trajectory) snprintf(tp, sizeof tp, "%s", o->trajectory);
  else snprintf(tp, sizeof tp, "%s/trajectory.jsonl", out_dir);
  S.traj = fopen(tp, "w");
  if (!S.traj) {
    kf_diag_error(diag, "agent: %s: cannot write the trajectory: %s", tp, strerror(errno));
    return KF_ERR_IO;
  }
  kf_status st = KF_OK;
  cJSON *tl = tools();
  S.messages = cJSON_CreateArray();
  char *first = brief(&S);
  if (!tl || !S.messages || !first) st = KF_ERR_NOMEM;
  if (!st) st = add_message(&S, "system", (const char *)kf_skill_md, NULL);
  if (!st) st = add_message(&S, "user", first, NULL);
  free(first);
  if (!st) {
    cJSON *r = cJSON_CreateObject();
    const char *key = NULL;
    {
      /* the task's key, for joining trajectories with tasks and the cache
       * (the judge reports a task it cannot read) */
      char *t = NULL;
      kf_strbuf ignored;
      kf_strbuf_init(&ignored);
      kf_diag quiet;
      kf_diag_init(&quiet, to_buf, &ignored);
      if (kf_read_text(tj, 16 << 20, &t, &quiet) == KF_OK) {
        cJSON *j = cJSON_Parse(t);
        const cJSON *k = j ? cJSON_GetObjectItemCaseSensitive(j, "key") : NULL;
        if (cJSON_IsString(k)) key = dup_str(k->valuestring);
        cJSON_Delete(j);
      }
      free(t);
      kf_strbuf_fini(&ignored);
    }
    if (r) {
      cJSON_AddStringToObject(r, "type", "start");
      cJSON_AddStringToObject(r, "format", "kfuse-trajectory-v1");
      cJSON_AddStringToObject(r, "task", S.task_real);
      if (key) cJSON_AddStringToObject(r, "task_key", key);
      cJSON_AddStringToObject(r, "model", o->llm.model ? o->llm.model : "");
      cJSON_AddStringToObject(r, "endpoint", o->llm.endpoint ? o->llm.endpoint : "");
      cJSON_AddStringToObject(r, "skill_version", kf_agent_skill_version());
      cJSON *b = cJSON_AddObjectToObject(r, "budget");
      if (b) {
        cJSON_AddNumberToObject(b, "turns", o->max_turns);
        cJSON_AddNumberToObject(b, "tokens", (double)o->max_tokens);
        cJSON_AddNumberToObject(b, "seconds", o->max_seconds);
        cJSON_AddNumberToObject(b, "judge_calls", o->max_judge);
      }
      cJSON_AddItemToObject(r, "messages", cJSON_Duplicate(S.messages, 1));
      cJSON_AddItemToObject(r, "tools", cJSON_Duplicate(tl, 1));
    }
    free((char *)key);
    record(&S, r);
  }
  while (!st && !S.submitted && !over_budget(&S)) {
    S.turn++;
    trim(&S);
    kf_llm_reply rep;
    kf_strbuf why;
    kf_strbuf_init(&why);
    kf_diag d;
    kf_diag_init(&d, to_buf, &why);
    double t = now_s();
    kf_status cs = kf_llm_chat(&o->llm, S.messages, tl, &rep, &d);
    res->model_seconds += now_s() - t;
    res->turns = S.turn;
    if (cs == KF_ERR_NOMEM) st = cs;
    if (cs) {
      /* the endpoint failed: the session ends, the best unit stays */
      char w[128];
      snprintf(w, sizeof w, "%s", why.data ? why.data : kf_status_str(cs));
      char *nl = strchr(w, '\n');
      if (nl) *nl = '\0';
      snprintf(res->stop, sizeof res->stop, "the endpoint failed: %s", w);
      kf_diag_warn(diag, "agent: %s", why.data ? why.data : kf_status_str(cs));
      cJSON *r = cJSON_CreateObject();
      if (r) {
        cJSON_AddStringToObject(r, "type", "error");
        cJSON_AddNumberToObject(r, "turn", S.turn);
        cJSON_AddStringToObject(r, "error", why.data ? why.data : kf_status_str(cs));
        cJSON_AddNumberToObject(r, "attempts", rep.attempts);
      }
      record(&S, r);
      kf_strbuf_fini(&why);
      break;
    }
    kf_strbuf_fini(&why);
    if (rep.prompt_tokens > 0) res->prompt_tokens += rep.prompt_tokens;
    if (rep.completion_tokens > 0) res->completion_tokens += rep.completion_tokens;
    cJSON *r = cJSON_CreateObject();
    if (r) {
      cJSON_AddStringToObject(r, "type", "assistant");
      cJSON_AddNumberToObject(r, "turn", S.turn);
      cJSON_AddItemToObject(r, "message", cJSON_Duplicate(rep.message, 1));
      cJSON_AddNumberToObject(r, "prompt_tokens", (double)rep.prompt_tokens);
      cJSON_AddNumberToObject(r, "completion_tokens", (double)rep.completion_tokens);
      cJSON_AddNumberToObject(r, "attempts", rep.attempts);
      cJSON_AddNumberToObject(r, "seconds", rep.seconds);
      if (rep.finish_reason) cJSON_AddStringToObject(r, "finish_reason", rep.finish_reason);
    }
    record(&S, r);
    /* the assistant's message goes back as received, then one tool message
     * per call */
    cJSON *m = cJSON_Duplicate(rep.message, 1);
    if (!m) st = KF_ERR_NOMEM;
    else cJSON_AddItemToArray(S.messages, m);
    for (int i = 0; i < rep.n_calls && !st; i++) st = one_call(&S, &rep.calls[i]);
    if (!st && rep.n_calls == 0)
      st = add_message(&S, "user", "Use the tools: write_unit, judge, and submit when you are done.", NULL);
    kf_llm_reply_fini(&rep);
  }
  if (!res->stop[0])
    snprintf(res->stop, sizeof res->stop, "%s", S.submitted ? "submitted" : st ? kf_status_str(st) : "ended");
  res->seconds = now_s() - S.t0;
  write_result(&S);
  if (st == KF_ERR_NOMEM) kf_diag_error(diag, "agent: out of memory");
  if (S.traj && fclose(S.traj) != 0) kf_diag_warn(diag, "agent: the trajectory could not be closed");
  cJSON_Delete(tl);
  cJSON_Delete(S.messages);
  return st;
}
