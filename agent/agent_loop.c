/* agent/agent_loop.c — the LLM kernel agent's loop over one task
 * (kfuse/agent_loop.h; docs/AGENT.md, "The agent loop").
 *
 * A ReAct loop: the conversation (system: agent/SKILL.md; user: the task's
 * summary) goes to the model with the tool definitions; each tool call in
 * the reply runs through the environment session (kfuse/env_session.h:
 * the tools, the judge, the kept unit, the trajectory's tool records) and
 * its observation goes back as a tool message. This file adds what a
 * model behind an endpoint needs: the conversation, its trimming, the
 * budgets of turns, tokens and time, and the assistant and error records.
 *
 * OUT_DIR as the session writes it (attempts/NNN, unit.json + unit.cu,
 * result.json with the loop's counts added, the trajectory). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "kfuse/agent_loop.h"
#include "kfuse/env_session.h"

void kf_agent_options_init(kf_agent_options *o) {
  memset(o, 0, sizeof *o);
  kf_llm_config_init(&o->llm);
  o->max_turns = 20;
  o->max_judge = 10;
  o->context_chars = 400000;
}

const char *kf_agent_skill_version(void) { return kf_env_skill_version(); }

typedef struct sess {
  const kf_agent_options *o;
  kf_agent_result *res;
  kf_diag *diag;
  kf_env_session *env;
  cJSON *messages;
  double t0;
  bool submitted;
  int turn;
} sess;

/* the session's counts into the result */
static void sync_res(sess *S) {
  kf_env_stats e;
  kf_env_session_stats(S->env, &e);
  kf_agent_result *R = S->res;
  R->have_unit = e.have_unit;
  R->best_reward = e.best_reward;
  R->best_ms = e.best_ms;
  R->best_fraction = e.best_fraction;
  R->tool_calls = e.tool_calls;
  R->judge_calls = e.judge_calls;
  R->units_written = e.units_written;
  R->judge_seconds = e.judge_seconds;
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

/* A user message the loop adds (a nudge), also in the trajectory, so that
 * replaying the trajectory rebuilds every request the loop sent */
static kf_status add_user(sess *S, const char *content) {
  kf_status st = add_message(S, "user", content, NULL);
  cJSON *r = st ? NULL : cJSON_CreateObject();
  if (r) {
    cJSON_AddStringToObject(r, "type", "user");
    cJSON_AddNumberToObject(r, "turn", S->turn);
    cJSON_AddStringToObject(r, "content", content);
    kf_env_session_record(S->env, r, S->diag);
  }
  return st;
}

static int64_t message_chars(const cJSON *m) {
  char *s = cJSON_PrintUnformatted(m);
  int64_t n = s ? (int64_t)strlen(s) : 0;
  free(s);
  return n;
}

static void record_trim(sess *S, cJSON *r) {
  if (!r) return;
  cJSON_AddStringToObject(r, "type", "trim");
  cJSON_AddNumberToObject(r, "turn", S->turn);
  kf_env_session_record(S->env, r, S->diag);
}

static bool role_is(const cJSON *m, const char *role) {
  const cJSON *r = cJSON_GetObjectItemCaseSensitive(m, "role");
  return cJSON_IsString(r) && strcmp(r->valuestring, role) == 0;
}

/* While the conversation is over the context budget: first older tool
 * observations give way (all but the last four: a record {index,
 * content} each), then whole older turns (an assistant message with the
 * tool messages and nudges after it, oldest first, after the system and
 * task messages, never the last turn: a record {drop: first index, count}
 * each), so a request stays within the budget and remains a valid
 * conversation (every tool message after its call). Each record says what
 * changed, so replaying the trajectory rebuilds every request. */
static void trim(sess *S) {
  int64_t total = 0;
  int n = cJSON_GetArraySize(S->messages), tools_seen = 0;
  for (int i = 0; i < n; i++) total += message_chars(cJSON_GetArrayItem(S->messages, i));
  for (int i = n - 1; i >= 0 && total > S->o->context_chars; i--) {
    cJSON *m = cJSON_GetArrayItem(S->messages, i);
    if (!role_is(m, "tool")) continue;
    if (++tools_seen <= 4) continue;
    cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
    if (!cJSON_IsString(c) || strncmp(c->valuestring, "[trimmed", 8) == 0) continue;
    size_t len = strlen(c->valuestring);
    char t[96];
    snprintf(t, sizeof t, "[trimmed: %zu bytes of an older observation]", len);
    cJSON_ReplaceItemInObjectCaseSensitive(m, "content", cJSON_CreateString(t));
    total -= (int64_t)len - (int64_t)strlen(t);
    cJSON *r = cJSON_CreateObject(); /* the trim itself, for a replay */
    if (r) {
      cJSON_AddNumberToObject(r, "index", i);
      cJSON_AddStringToObject(r, "content", t);
    }
    record_trim(S, r);
  }
  /* whole turns: from index 2 (after the system and task messages) */
  while (total > S->o->context_chars) {
    n = cJSON_GetArraySize(S->messages);
    const int first = 2;
    if (first >= n || !role_is(cJSON_GetArrayItem(S->messages, first), "assistant")) break;
    int end = first + 1;
    while (end < n && !role_is(cJSON_GetArrayItem(S->messages, end), "assistant")) end++;
    if (end >= n) break; /* the last turn stays */
    for (int i = first; i < end; i++) total -= message_chars(cJSON_GetArrayItem(S->messages, i));
    for (int i = first; i < end; i++) cJSON_DeleteItemFromArray(S->messages, first);
    cJSON *r = cJSON_CreateObject();
    if (r) {
      cJSON_AddNumberToObject(r, "drop", first);
      cJSON_AddNumberToObject(r, "count", end - first);
    }
    record_trim(S, r);
  }
}

static bool over_budget(sess *S) {
  const kf_agent_options *o = S->o;
  kf_agent_result *R = S->res;
  if (S->turn >= o->max_turns) snprintf(R->stop, sizeof R->stop, "the turn budget (%d) is spent", o->max_turns);
  else if (o->max_tokens > 0 && R->prompt_tokens + R->completion_tokens >= o->max_tokens)
    snprintf(R->stop, sizeof R->stop, "the token budget (%lld) is spent", (long long)o->max_tokens);
  else if (o->max_seconds > 0 && kf_now_s() - S->t0 >= o->max_seconds)
    snprintf(R->stop, sizeof R->stop, "the time budget (%.0f s) is spent", o->max_seconds);
  else if (o->target_fraction > 0 && R->have_unit && R->best_fraction >= o->target_fraction)
    snprintf(R->stop, sizeof R->stop, "a verified unit reached %.2f of the floor", R->best_fraction);
  else if (o->should_stop && o->should_stop(o->stop_user, R, R->stop, sizeof R->stop)) {
    if (!R->stop[0]) snprintf(R->stop, sizeof R->stop, "stopped by the caller");
  } else
    return false;
  return true;
}

static kf_status one_call(sess *S, const kf_llm_tool_call *c) {
  kf_env_step step;
  kf_status st = kf_env_session_call(S->env, c->id, c->name, c->arguments, c->args, c->args_error, S->turn, &step,
                                     S->diag);
  sync_res(S);
  if (st) return st;
  if (step.done) S->submitted = true;
  st = add_message(S, "tool", step.observation, c->id);
  kf_env_step_fini(&step);
  return st;
}

static void write_result(sess *S) {
  kf_agent_result *R = S->res;
  cJSON *r = kf_env_session_result(S->env, R->stop);
  if (!r) return;
  cJSON_AddNumberToObject(r, "turns", R->turns);
  cJSON_AddNumberToObject(r, "prompt_tokens", (double)R->prompt_tokens);
  cJSON_AddNumberToObject(r, "completion_tokens", (double)R->completion_tokens);
  cJSON_AddNumberToObject(r, "model_seconds", R->model_seconds);
  cJSON_AddBoolToObject(r, "tokens_estimated", R->tokens_estimated);
  if (R->error[0]) cJSON_AddStringToObject(r, "error", R->error);
  else cJSON_AddNullToObject(r, "error");
  kf_env_session_end(S->env, r, S->diag);
}

kf_status kf_agent_run(const char *task_dir, const char *out_dir, const kf_agent_options *o, kf_agent_result *res,
                       kf_diag *diag) {
  memset(res, 0, sizeof *res);
  res->best_reward = -2;
  res->best_ms = res->best_fraction = -1;
  sess S;
  memset(&S, 0, sizeof S);
  S.o = o;
  S.res = res;
  S.diag = diag;
  S.t0 = kf_now_s();
  if (!task_dir || !out_dir || o->max_turns < 1) {
    kf_diag_error(diag, "agent: a task directory, an output directory and at least one turn are needed");
    return KF_ERR_ARG;
  }
  kf_env_options eo;
  kf_env_options_init(&eo);
  eo.max_judge = o->max_judge;
  eo.judge = o->judge;
  eo.judge_user = o->judge_user;
  eo.trajectory = o->trajectory;
  eo.source = "agent";
  eo.model = o->llm.model;
  eo.endpoint = o->llm.endpoint;
  cJSON *budget = cJSON_CreateObject();
  if (!budget) return KF_ERR_NOMEM;
  cJSON_AddNumberToObject(budget, "turns", o->max_turns);
  cJSON_AddNumberToObject(budget, "tokens", (double)o->max_tokens);
  cJSON_AddNumberToObject(budget, "seconds", o->max_seconds);
  cJSON_AddNumberToObject(budget, "judge_calls", o->max_judge);
  eo.budget = budget;
  cJSON *request = cJSON_CreateObject(); /* what every request carries besides the conversation */
  if (!request) {
    cJSON_Delete(budget);
    return KF_ERR_NOMEM;
  }
  if (o->llm.temperature >= 0) cJSON_AddNumberToObject(request, "temperature", o->llm.temperature);
  if (o->llm.max_tokens > 0) cJSON_AddNumberToObject(request, "max_tokens", o->llm.max_tokens);
  eo.request = request;
  kf_status st = kf_env_session_open(task_dir, out_dir, &eo, &S.env, diag);
  cJSON_Delete(budget);
  cJSON_Delete(request);
  if (st) return st;
  const cJSON *tl = kf_env_session_tools(S.env);
  S.messages = cJSON_CreateArray();
  if (!S.messages) st = KF_ERR_NOMEM;
  if (!st) st = add_message(&S, "system", kf_env_session_system(S.env), NULL);
  if (!st) st = add_message(&S, "user", kf_env_session_prompt(S.env), NULL);
  /* can it judge at all? before any token is spent */
  if (!st && o->ready) {
    char why[400] = "";
    if (!o->ready(o->ready_user, why, sizeof why)) {
      snprintf(res->error, sizeof res->error, "the judge cannot run here: %s", why);
      snprintf(res->stop, sizeof res->stop, "the judge cannot run here");
      cJSON *r = cJSON_CreateObject();
      if (r) {
        cJSON_AddStringToObject(r, "type", "error");
        cJSON_AddNumberToObject(r, "turn", 0);
        cJSON_AddStringToObject(r, "error", res->error);
      }
      kf_env_session_record(S.env, r, diag);
    }
  }
  while (!st && !res->error[0] && !S.submitted && !over_budget(&S)) {
    S.turn++;
    trim(&S);
    kf_llm_reply rep;
    kf_strbuf why;
    kf_strbuf_init(&why);
    kf_diag d;
    kf_diag_init(&d, kf_diag_to_strbuf, &why);
    kf_llm_config lc = o->llm;
    if (o->max_seconds > 0) lc.deadline = S.t0 + o->max_seconds; /* a request ends with the budget */
    kf_status cs = kf_llm_chat(&lc, S.messages, tl, &rep, &d);
    /* the endpoint's time only: encoding the conversation and parsing the
     * reply are the loop's own */
    res->model_seconds += rep.wait_seconds;
    res->turns = S.turn;
    if (cs == KF_ERR_NOMEM) st = cs;
    if (cs) {
      /* the endpoint failed: the session ends, the best unit stays */
      char w[128];
      snprintf(w, sizeof w, "%s", why.data ? why.data : kf_status_str(cs));
      char *nl = strchr(w, '\n');
      if (nl) *nl = '\0';
      snprintf(res->stop, sizeof res->stop, "the endpoint failed: %s", w);
      snprintf(res->error, sizeof res->error, "the endpoint failed: %s", why.data ? why.data : kf_status_str(cs));
      kf_diag_warn(diag, "agent: %s", why.data ? why.data : kf_status_str(cs));
      cJSON *r = cJSON_CreateObject();
      if (r) {
        cJSON_AddStringToObject(r, "type", "error");
        cJSON_AddNumberToObject(r, "turn", S.turn);
        cJSON_AddStringToObject(r, "error", why.data ? why.data : kf_status_str(cs));
        cJSON_AddNumberToObject(r, "attempts", rep.attempts);
      }
      kf_env_session_record(S.env, r, diag);
      kf_strbuf_fini(&why);
      break;
    }
    kf_strbuf_fini(&why);
    if (rep.tokens_estimated) res->tokens_estimated = true;
    if (rep.prompt_tokens > 0) res->prompt_tokens += rep.prompt_tokens;
    if (rep.completion_tokens > 0) res->completion_tokens += rep.completion_tokens;
    cJSON *r = cJSON_CreateObject();
    if (r) {
      cJSON_AddStringToObject(r, "type", "assistant");
      cJSON_AddNumberToObject(r, "turn", S.turn);
      cJSON_AddItemToObject(r, "message", cJSON_Duplicate(rep.message, 1));
      cJSON_AddNumberToObject(r, "prompt_tokens", (double)rep.prompt_tokens);
      cJSON_AddNumberToObject(r, "completion_tokens", (double)rep.completion_tokens);
      if (rep.tokens_estimated) cJSON_AddBoolToObject(r, "tokens_estimated", true);
      cJSON_AddNumberToObject(r, "attempts", rep.attempts);
      cJSON_AddNumberToObject(r, "seconds", rep.seconds);
      if (rep.finish_reason) cJSON_AddStringToObject(r, "finish_reason", rep.finish_reason);
    }
    kf_env_session_record(S.env, r, diag);
    /* the assistant's message goes back as received, then one tool message
     * per call */
    cJSON *m = cJSON_Duplicate(rep.message, 1);
    if (!m) st = KF_ERR_NOMEM;
    else cJSON_AddItemToArray(S.messages, m);
    for (int i = 0; i < rep.n_calls && !st; i++) st = one_call(&S, &rep.calls[i]);
    if (!st && rep.n_calls == 0) {
      /* say why the reply ended where it did, when it was not the model's choice */
      char nudge[400];
      const char *fr = rep.finish_reason ? rep.finish_reason : "";
      if (strcmp(fr, "length") == 0)
        snprintf(nudge, sizeof nudge,
                 "Your reply was cut off at the completion token limit (%d tokens) before it made a tool call. "
                 "Keep replies short: write the unit with write_unit, then judge; submit when you are done.",
                 o->llm.max_tokens);
      else if (strcmp(fr, "content_filter") == 0)
        snprintf(nudge, sizeof nudge,
                 "Your reply was stopped by the endpoint's content filter before it made a tool call. Use the "
                 "tools: write_unit, judge, profile, and submit when you are done.");
      else
        snprintf(nudge, sizeof nudge, "Use the tools: write_unit, judge, profile, and submit when you are done.");
      st = add_user(&S, nudge);
    }
    kf_llm_reply_fini(&rep);
  }
  if (!res->stop[0])
    snprintf(res->stop, sizeof res->stop, "%s", S.submitted ? "submitted" : st ? kf_status_str(st) : "ended");
  res->seconds = kf_now_s() - S.t0;
  sync_res(&S);
  write_result(&S);
  if (st == KF_ERR_NOMEM) kf_diag_error(diag, "agent: out of memory");
  kf_env_session_destroy(S.env);
  cJSON_Delete(S.messages);
  return st;
}
