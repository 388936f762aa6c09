/* tools/cmd_llm.c — `kfuse llm-chat`: one request to an OpenAI-compatible
 * endpoint (include/kfuse/llm.h), the reply printed as JSON: what a user
 * checks an endpoint with before `kfuse compile --agent llm`, and what the
 * client's tests drive (tests/agent/llm_check.py).
 *
 *   kfuse llm-chat --endpoint URL --model NAME (--prompt TEXT | --messages FILE)
 *                  [--tools FILE] [--api-key-env NAME] [--temperature T]
 *                  [--max-tokens N] [--timeout S] [--retries N] [--backoff S]
 *
 * Exit status 0 with a reply, 1 when the request failed (the reason on
 * stderr), 2 on bad usage. The API key is never printed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kfuse/llm.h"
#include "tools_int.h"

static cJSON *read_json_array(const char *path, const char *what, kf_diag *diag) {
  char *text = NULL;
  if (kf_read_text(path, 64L << 20, &text, diag) != KF_OK) return NULL;
  cJSON *j = cJSON_Parse(text);
  free(text);
  if (!cJSON_IsArray(j)) {
    kf_diag_error(diag, "%s: %s must be a JSON array", path, what);
    cJSON_Delete(j);
    return NULL;
  }
  return j;
}

static cJSON *reply_json(const kf_llm_reply *r) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  if (r->content) cJSON_AddStringToObject(o, "content", r->content);
  else cJSON_AddNullToObject(o, "content");
  cJSON *calls = cJSON_AddArrayToObject(o, "tool_calls");
  for (int i = 0; calls && i < r->n_calls; i++) {
    const kf_llm_tool_call *k = &r->calls[i];
    cJSON *c = cJSON_CreateObject();
    if (!c) break;
    cJSON_AddStringToObject(c, "id", k->id);
    cJSON_AddStringToObject(c, "name", k->name);
    if (k->arguments) cJSON_AddStringToObject(c, "arguments", k->arguments);
    if (k->args) cJSON_AddItemToObject(c, "args", cJSON_Duplicate(k->args, 1));
    if (k->args_error) cJSON_AddStringToObject(c, "args_error", k->args_error);
    cJSON_AddItemToArray(calls, c);
  }
  if (r->finish_reason) cJSON_AddStringToObject(o, "finish_reason", r->finish_reason);
  cJSON_AddNumberToObject(o, "prompt_tokens", (double)r->prompt_tokens);
  cJSON_AddNumberToObject(o, "completion_tokens", (double)r->completion_tokens);
  cJSON_AddNumberToObject(o, "attempts", r->attempts);
  cJSON_AddNumberToObject(o, "seconds", round(r->seconds * 1000) / 1000);
  return o;
}

int kf_cli_llm_option(int argc, char **argv, int *i, const char *cmd, kf_llm_config *c, kf_diag *diag) {
  const char *a = argv[*i], *v;
  double d;
  long long n;
  if (strcmp(a, "--endpoint") == 0) return kf_cli_value(argc, argv, i, cmd, &c->endpoint, diag) ? 1 : -1;
  if (strcmp(a, "--model") == 0) return kf_cli_value(argc, argv, i, cmd, &c->model, diag) ? 1 : -1;
  if (strcmp(a, "--api-key-env") == 0) return kf_cli_value(argc, argv, i, cmd, &c->api_key_env, diag) ? 1 : -1;
  if (strcmp(a, "--temperature") == 0) {
    if (!kf_cli_value(argc, argv, i, cmd, &v, diag) || !kf_cli_double(cmd, a, v, 0, 2, &d, diag)) return -1;
    c->temperature = d;
    return 1;
  }
  if (strcmp(a, "--max-tokens") == 0) {
    if (!kf_cli_value(argc, argv, i, cmd, &v, diag) || !kf_cli_int(cmd, a, v, 1, 1 << 24, &n, diag)) return -1;
    c->max_tokens = (int)n;
    return 1;
  }
  if (strcmp(a, "--timeout") == 0) {
    if (!kf_cli_value(argc, argv, i, cmd, &v, diag) || !kf_cli_double(cmd, a, v, 0.001, 86400, &c->timeout_s, diag))
      return -1;
    return 1;
  }
  if (strcmp(a, "--retries") == 0) {
    if (!kf_cli_value(argc, argv, i, cmd, &v, diag) || !kf_cli_int(cmd, a, v, 0, 100, &n, diag)) return -1;
    c->max_retries = (int)n;
    return 1;
  }
  if (strcmp(a, "--backoff") == 0) {
    if (!kf_cli_value(argc, argv, i, cmd, &v, diag) || !kf_cli_double(cmd, a, v, 0, 3600, &c->backoff_s, diag))
      return -1;
    return 1;
  }
  return 0;
}

int kf_cmd_llm_chat(int argc, char **argv, kf_diag *diag) {
  kf_llm_config c;
  kf_llm_config_init(&c);
  const char *prompt = NULL, *mfile = NULL, *tfile = NULL;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    int k = kf_cli_llm_option(argc, argv, &i, "llm-chat", &c, diag);
    if (k < 0) return 2;
    if (k > 0) continue;
    if (kf_cli_is_help(a)) {
      kf_cli_usage(stdout, "llm-chat");
      return 0;
    } else if (strcmp(a, "--prompt") == 0) {
      if (!kf_cli_value(argc, argv, &i, "llm-chat", &prompt, diag)) return 2;
    } else if (strcmp(a, "--messages") == 0) {
      if (!kf_cli_value(argc, argv, &i, "llm-chat", &mfile, diag)) return 2;
    } else if (strcmp(a, "--tools") == 0) {
      if (!kf_cli_value(argc, argv, &i, "llm-chat", &tfile, diag)) return 2;
    } else {
      return kf_cli_unknown("llm-chat", a, diag);
    }
  }
  if (!c.endpoint || !c.model) return kf_cli_error("llm-chat", diag, "--endpoint and --model are needed");
  if (!prompt == !mfile) return kf_cli_error("llm-chat", diag, "give one of --prompt and --messages");
  cJSON *messages = NULL, *tools = NULL;
  if (mfile) {
    if (!(messages = read_json_array(mfile, "--messages", diag))) return 1;
  } else {
    messages = cJSON_CreateArray();
    cJSON *m = cJSON_CreateObject();
    if (!messages || !m || !cJSON_AddStringToObject(m, "role", "user") ||
        !cJSON_AddStringToObject(m, "content", prompt) || !cJSON_AddItemToArray(messages, m)) {
      cJSON_Delete(m);
      cJSON_Delete(messages);
      kf_diag_error(diag, "llm-chat: out of memory");
      return 1;
    }
  }
  if (tfile && !(tools = read_json_array(tfile, "--tools", diag))) {
    cJSON_Delete(messages);
    return 1;
  }
  kf_llm_reply r;
  kf_status st = kf_llm_chat(&c, messages, tools, &r, diag);
  cJSON_Delete(messages);
  cJSON_Delete(tools);
  if (st != KF_OK) return 1;
  cJSON *o = reply_json(&r);
  char *s = o ? cJSON_Print(o) : NULL;
  cJSON_Delete(o);
  kf_llm_reply_fini(&r);
  if (!s) {
    kf_diag_error(diag, "llm-chat: out of memory");
    return 1;
  }
  printf("%s\n", s);
  free(s);
  return fflush(stdout) == 0 ? 0 : 1;
}
