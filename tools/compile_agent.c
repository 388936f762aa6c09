/* tools/compile_agent.c — `kfuse compile --agent llm`: before the compile,
 * LLM agent sessions (include/kfuse/agent_loop.h) on the model's groups,
 * whose verified units go in as --unit does (the compile's judge verifies
 * each again in place; the built-in unit stays wherever none is verified).
 *
 * The groups are written as tasks (kf_task_write) under AGENT_DIR/tasks,
 * one per unique key, and ordered by their floor's time on an H100 (bytes
 * at 3.0 TB/s plus FLOPs at 50 TFLOP/s, the fp32 rate:
 * kf_task_floor_estimate_ms, which kfuse tasks filters by): the model's time is
 * where the floor is, before anything is measured. The first --agent-groups
 * of them with a built-in unit (the fallback) get a session each, in
 * AGENT_DIR/group_<id>; AGENT_DIR/agent.json lists the sessions. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "kfuse/agent_loop.h"
#include "kfuse/frontend.h"
#include "kfuse/task.h"
#include "tools_int.h"

typedef struct cand {
  int group;
  char key[65];
  char dir[8192];
  double est_ms;
} cand;

static int by_est(const void *a, const void *b) {
  const cand *x = a, *y = b;
  return x->est_ms < y->est_ms ? 1 : x->est_ms > y->est_ms ? -1 : x->group - y->group;
}

static cJSON *read_json(const char *path, kf_diag *diag) {
  char *t = NULL;
  if (kf_read_text(path, 64L << 20, &t, diag) != KF_OK) return NULL;
  cJSON *j = cJSON_Parse(t);
  free(t);
  if (!j) kf_diag_error(diag, "%s: not JSON", path);
  return j;
}

kf_status kf_compile_agent(const char *model, const kf_compile_options *co, const kf_agent_options *ao,
                           const char *agent_dir, int max_groups, kf_compile_given *given, kf_diag *diag) {
  given->n = 0;
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
    bool seen = false;
    for (int k = 0; k < nc && !seen; k++) seen = strcmp(c[k].key, key->valuestring) == 0;
    if (seen) continue; /* a repeated block: one session serves every copy */
    cand *x = &c[nc];
    x->group = (int)gr->valuedouble;
    snprintf(x->key, sizeof x->key, "%s", key->valuestring);
    if ((size_t)snprintf(x->dir, sizeof x->dir, "%s/%s", tasks, (const char *)dir->valuestring) >= sizeof x->dir)
      continue;
    snprintf(p, sizeof p, "%s/task.json", x->dir);
    cJSON *tj = read_json(p, diag);
    const cJSON *bu = tj ? cJSON_GetObjectItemCaseSensitive(tj, "builtin_unit") : NULL;
    const cJSON *fl = tj ? cJSON_GetObjectItemCaseSensitive(tj, "floor") : NULL;
    const cJSON *by = cJSON_IsObject(fl) ? cJSON_GetObjectItemCaseSensitive(fl, "bytes") : NULL;
    const cJSON *fp = cJSON_IsObject(fl) ? cJSON_GetObjectItemCaseSensitive(fl, "flops") : NULL;
    bool fallback = cJSON_IsString(bu);
    x->est_ms = kf_task_floor_estimate_ms(cJSON_IsNumber(by) ? by->valuedouble : 0,
                                          cJSON_IsNumber(fp) ? fp->valuedouble : 0);
    cJSON_Delete(tj);
    if (fallback) nc++; /* no built-in unit: no fallback, no session */
  }
  cJSON_Delete(list);
  qsort(c, (size_t)nc, sizeof *c, by_est);
  if (nc > max_groups) nc = max_groups;
  cJSON *sum = cJSON_CreateObject();
  cJSON *sess = sum ? cJSON_AddArrayToObject(sum, "sessions") : NULL;
  if (sum) {
    cJSON_AddStringToObject(sum, "format", "kfuse-agent-compile-v1");
    cJSON_AddStringToObject(sum, "model", ao->llm.model);
    cJSON_AddStringToObject(sum, "endpoint", ao->llm.endpoint);
    cJSON_AddStringToObject(sum, "skill_version", kf_agent_skill_version());
  }
  for (int i = 0; i < nc && !st; i++) {
    char out[4200];
    if ((size_t)snprintf(out, sizeof out, "%s/group_%d", agent_dir, c[i].group) >= sizeof out) {
      kf_diag_error(diag, "--agent-dir %s: path too long", agent_dir);
      st = KF_ERR_ARG;
      break;
    }
    if (co->progress)
      fprintf(stderr, "kfuse: agent: group %d (%d of %d, floor about %.3f ms) with %s\n", c[i].group, i + 1, nc,
              c[i].est_ms, ao->llm.model);
    kf_agent_result r;
    kf_status s = kf_agent_run(c[i].dir, out, ao, &r, diag);
    if (s == KF_ERR_NOMEM) st = s;
    if (co->progress)
      fprintf(stderr, "kfuse: agent: group %d: %s; %s\n", c[i].group, r.stop[0] ? r.stop : kf_status_str(s),
              r.have_unit ? "a verified unit" : "no verified unit, the built-in one stays");
    if (!s && r.have_unit && given->n < KF_COMPILE_GIVEN_MAX) {
      snprintf(given->keys[given->n], sizeof given->keys[0], "%s", c[i].key);
      snprintf(given->dirs[given->n], sizeof given->dirs[0], "%s", out);
      given->n++;
    }
    cJSON *e = sess ? cJSON_CreateObject() : NULL;
    if (e) {
      cJSON_AddNumberToObject(e, "group", c[i].group);
      cJSON_AddStringToObject(e, "key", c[i].key);
      cJSON_AddStringToObject(e, "dir", out);
      cJSON_AddNumberToObject(e, "floor_estimate_ms", c[i].est_ms);
      cJSON_AddStringToObject(e, "stop", s ? kf_status_str(s) : r.stop);
      cJSON_AddBoolToObject(e, "have_unit", !s && r.have_unit);
      if (!s && r.have_unit) cJSON_AddNumberToObject(e, "best_reward", r.best_reward);
      cJSON_AddNumberToObject(e, "turns", r.turns);
      cJSON_AddNumberToObject(e, "judge_calls", r.judge_calls);
      cJSON_AddNumberToObject(e, "tokens", (double)(r.prompt_tokens + r.completion_tokens));
      cJSON_AddNumberToObject(e, "seconds", r.seconds);
      cJSON_AddItemToArray(sess, e);
    }
  }
  free(c);
  char *text = sum ? cJSON_Print(sum) : NULL;
  cJSON_Delete(sum);
  if (text) {
    snprintf(p, sizeof p, "%s/agent.json", agent_dir);
    if (kf_write_file_atomic(p, text, strlen(text), diag) != KF_OK && !st) st = KF_ERR_IO;
    free(text);
  } else if (!st) {
    st = KF_ERR_NOMEM;
  }
  return st;
}
