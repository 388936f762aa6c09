/* kfuse/llm.h — an OpenAI-compatible Chat Completions client (the LLM
 * kernel agent's transport; docs/AGENT.md).
 *
 * One call sends the conversation (and the tools the model may call) to
 * <endpoint>/chat/completions and returns the assistant's message: its
 * text, its tool calls with their arguments parsed, the token counts.
 * libcurl is loaded at run time (dlopen "libcurl.so.4"), so kfuse runs
 * where it is absent until an endpoint is used.
 *
 * The API key is read from the environment variable the config names
 * (OPENAI_API_KEY by default) at the moment of the request, sent as a
 * bearer token and never copied anywhere else: not into diagnostics,
 * replies, reports or files. A server without a key (a local vLLM or
 * SGLang) needs none.
 *
 * Transient failures are retried: HTTP 429, 500, 502, 503, 504, timeouts
 * and connection failures, up to max_retries more attempts, waiting the
 * server's Retry-After (seconds, capped at retry_after_max_s) or an
 * exponential backoff with jitter. Other HTTP errors fail at once with
 * the server's message. A reply that is not a chat completion is an error;
 * a tool call whose arguments are not a JSON object is not: the call
 * carries the parse error for the loop to hand back to the model. */
#ifndef KFUSE_LLM_H
#define KFUSE_LLM_H

#include <stdbool.h>
#include <stdint.h>

#include "kfuse/status.h"

typedef struct cJSON cJSON;

typedef struct kf_llm_config {
  const char *endpoint;    /* base URL: ".../v1" (the client appends "/chat/completions") */
  const char *model;
  const char *api_key_env; /* variable holding the key; NULL: OPENAI_API_KEY */
  double temperature;      /* < 0: not sent */
  int max_tokens;          /* <= 0: not sent */
  double timeout_s;        /* one request, connection included */
  int max_retries;         /* further attempts after a transient failure */
  double backoff_s;        /* first wait; doubles each retry, jittered */
  double backoff_max_s;
  double retry_after_max_s; /* longest Retry-After honoured */
  double deadline;         /* kf_now_s() time no request or wait may pass
                              (each attempt's timeout is cut to it, no retry
                              waits past it); 0: none */
} kf_llm_config;

/* Defaults: temperature and max tokens not sent, 120 s a request, 4
 * retries from 1 s doubling to 30 s, Retry-After up to 120 s. */
KF_API void kf_llm_config_init(kf_llm_config *c);

typedef struct kf_llm_tool_call {
  char *id;
  char *name;
  char *arguments;   /* as received */
  cJSON *args;       /* parsed, or NULL: then args_error says why */
  char *args_error;
} kf_llm_tool_call;

typedef struct kf_llm_reply {
  char *content;          /* the message's text, or NULL */
  kf_llm_tool_call *calls;
  int n_calls;
  char *finish_reason;    /* or NULL */
  int64_t prompt_tokens, completion_tokens; /* the server's "usage"; without
                                               one, estimated (a token per
                                               4 bytes of the request and of
                                               the message) */
  bool tokens_estimated;  /* the server gave no usage: the counts are estimates */
  int attempts;           /* requests sent */
  double seconds;         /* wall time, waits included */
  double wait_seconds;    /* of it, on the endpoint: the requests (sent,
                             answered, read) and the waits between them;
                             the rest is encoding the conversation and
                             parsing the reply */
  cJSON *message;         /* the assistant message as received (owned) */
} kf_llm_reply;

/* POST the conversation; messages: a JSON array of chat messages; tools:
 * a JSON array of tool definitions, or NULL. On success fills *out
 * (kf_llm_reply_fini frees it). Errors: KF_ERR_ARG (config), KF_ERR_UNSUPPORTED
 * (no libcurl), KF_ERR_IO (transport or HTTP failure after the retries),
 * KF_ERR_FORMAT (not a chat completion), KF_ERR_NOMEM. out->attempts,
 * out->seconds and out->wait_seconds are set either way. */
KF_API kf_status kf_llm_chat(const kf_llm_config *c, const cJSON *messages, const cJSON *tools,
                             kf_llm_reply *out, kf_diag *diag);
KF_API void kf_llm_reply_fini(kf_llm_reply *r);

#endif
