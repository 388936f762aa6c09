/* agent/llm.c — the OpenAI-compatible Chat Completions client
 * (kfuse/llm.h).
 *
 * libcurl is loaded with dlopen by support/curl.c (kfuse/curl.h), the
 * loader the cache's remote shares; curl.h is used for its constants and
 * types only. One easy handle per request:
 * the client is called a few times a minute, and a fresh handle keeps
 * nothing (no connection, no cookie) between conversations. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include "kfuse/curl.h"
#include "kfuse/llm.h"

/* ---- config and replies ---------------------------------------------------------- */

void kf_llm_config_init(kf_llm_config *c) {
  memset(c, 0, sizeof *c);
  c->temperature = -1.0;
  c->timeout_s = 120.0;
  c->max_retries = 4;
  c->backoff_s = 1.0;
  c->backoff_max_s = 30.0;
  c->retry_after_max_s = 120.0;
}

void kf_llm_reply_fini(kf_llm_reply *r) {
  if (!r) return;
  free(r->content);
  free(r->finish_reason);
  for (int i = 0; i < r->n_calls; i++) {
    free(r->calls[i].id);
    free(r->calls[i].name);
    free(r->calls[i].arguments);
    free(r->calls[i].args_error);
    cJSON_Delete(r->calls[i].args);
  }
  free(r->calls);
  cJSON_Delete(r->message);
  memset(r, 0, sizeof *r);
}

static char *dup_str(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* ---- one request ----------------------------------------------------------------- */

typedef struct body {
  char *data;
  size_t len, cap;
  bool overflow;
} body;

/* Replies larger than this are refused (a chat completion is kilobytes). */
#define BODY_MAX ((size_t)64 << 20)

static size_t on_data(char *p, size_t size, size_t n, void *user) {
  body *b = user;
  size_t k = size * n;
  if (b->len + k + 1 > BODY_MAX) {
    b->overflow = true;
    return 0; /* aborts the transfer */
  }
  if (b->len + k + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + k + 1) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) return 0;
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->len, p, k);
  b->len += k;
  b->data[b->len] = '\0';
  return k;
}

typedef struct hdrs {
  double retry_after; /* seconds; < 0: none */
} hdrs;

static size_t on_header(char *p, size_t size, size_t n, void *user) {
  hdrs *h = user;
  size_t k = size * n;
  double s = kf_curl_retry_after(p, k);
  if (s >= 0) h->retry_after = s;
  return k;
}

typedef enum outcome { SENT, TRANSIENT, FATAL } outcome;

/* One POST; *status the HTTP status (0: none). why: the failure, for the
 * diagnostic and the retry's progress line. */
static outcome post_once(const kf_curl_api *cu, const kf_llm_config *c, const char *url, const char *payload, const char *key,
                         body *b, long *status, hdrs *h, char *why, size_t nwhy) {
  *status = 0;
  h->retry_after = -1;
  b->len = 0;
  b->overflow = false;
  if (b->data) b->data[0] = '\0';
  CURL *e = cu->easy_init();
  if (!e) {
    snprintf(why, nwhy, "curl_easy_init failed");
    return FATAL;
  }
  struct curl_slist *hl = cu->slist_append(NULL, "Content-Type: application/json");
  struct curl_slist *h2 = hl ? cu->slist_append(hl, "Accept: application/json") : NULL;
  char *auth = NULL;
  bool ok = h2 != NULL;
  if (ok && key && *key) {
    size_t n = strlen(key) + 32;
    auth = malloc(n);
    ok = auth != NULL;
    if (ok) {
      snprintf(auth, n, "Authorization: Bearer %s", key);
      struct curl_slist *h3 = cu->slist_append(h2, auth);
      ok = h3 != NULL;
      if (ok) h2 = h3;
    }
  }
  if (h2) hl = h2;
  if (!ok) {
    if (auth) {
      memset(auth, 0, strlen(auth));
      free(auth);
    }
    if (hl) cu->slist_free_all(hl);
    cu->easy_cleanup(e);
    snprintf(why, nwhy, "out of memory");
    return FATAL;
  }
  double limit = c->timeout_s;
  if (c->deadline > 0 && c->deadline - kf_now_s() < limit) limit = c->deadline - kf_now_s();
  long tmo = (long)(limit * 1000.0);
  if (tmo < 1) tmo = 1;
  CURLcode r = CURLE_OK;
#define SET(opt, val) \
  if (r == CURLE_OK) r = cu->easy_setopt(e, opt, val)
  SET(CURLOPT_URL, url);
  SET(CURLOPT_HTTPHEADER, hl);
  SET(CURLOPT_POSTFIELDS, payload);
  SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(payload));
  SET(CURLOPT_WRITEFUNCTION, on_data);
  SET(CURLOPT_WRITEDATA, b);
  SET(CURLOPT_HEADERFUNCTION, on_header);
  SET(CURLOPT_HEADERDATA, h);
  SET(CURLOPT_TIMEOUT_MS, tmo);
  SET(CURLOPT_CONNECTTIMEOUT_MS, tmo);
  SET(CURLOPT_NOSIGNAL, 1L);
  SET(CURLOPT_FOLLOWLOCATION, 0L);
  SET(CURLOPT_USERAGENT, "kfuse");
#undef SET
  outcome out = SENT;
  if (r != CURLE_OK) {
    snprintf(why, nwhy, "setting up the request: %s", cu->easy_strerror(r));
    out = FATAL;
  } else {
    r = cu->easy_perform(e);
    if (r != CURLE_OK) {
      snprintf(why, nwhy, "%s", b->overflow ? "the reply exceeds 64 MiB" : cu->easy_strerror(r));
      out = b->overflow ? FATAL : TRANSIENT;
    } else if (cu->easy_getinfo(e, CURLINFO_RESPONSE_CODE, status) != CURLE_OK) {
      snprintf(why, nwhy, "no HTTP status");
      out = FATAL;
    } else if (*status == 429 || *status == 500 || *status == 502 || *status == 503 || *status == 504 ||
               *status == 408) {
      snprintf(why, nwhy, "HTTP %ld", *status);
      out = TRANSIENT;
    } else if (*status < 200 || *status >= 300) {
      snprintf(why, nwhy, "HTTP %ld", *status);
      out = FATAL;
    }
  }
  cu->slist_free_all(hl);
  if (auth) {
    memset(auth, 0, strlen(auth));
    free(auth);
  }
  cu->easy_cleanup(e);
  return out;
}

/* The server's own error message in a JSON error body, or the start of
 * the body, for the diagnostic. */
static void server_message(const body *b, char *out, size_t n) {
  out[0] = '\0';
  if (!b->data || !b->len) return;
  cJSON *j = cJSON_ParseWithLength(b->data, b->len);
  const cJSON *err = j ? cJSON_GetObjectItemCaseSensitive(j, "error") : NULL;
  const cJSON *msg = cJSON_IsObject(err) ? cJSON_GetObjectItemCaseSensitive(err, "message") : err;
  if (cJSON_IsString(msg)) {
    snprintf(out, n, ": %s", msg->valuestring);
  } else {
    size_t k = b->len < 200 ? b->len : 200;
    snprintf(out, n, ": %.*s%s", (int)k, b->data, b->len > k ? "..." : "");
  }
  cJSON_Delete(j);
  for (char *p = out; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
}


/* ---- the reply ------------------------------------------------------------------- */

/* The body parses as JSON with a "choices" array: what a cut-off body
 * (a 200 whose connection ended early) does not */
static bool whole_reply(const body *b) {
  cJSON *j = cJSON_ParseWithLength(b->data ? b->data : "", b->len);
  bool ok = j && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "choices"));
  cJSON_Delete(j);
  return ok;
}

static kf_status parse_reply(const body *b, kf_llm_reply *out, kf_diag *diag, const char *url) {
  cJSON *j = cJSON_ParseWithLength(b->data ? b->data : "", b->len);
  const cJSON *choices = j ? cJSON_GetObjectItemCaseSensitive(j, "choices") : NULL;
  const cJSON *c0 = cJSON_IsArray(choices) ? cJSON_GetArrayItem(choices, 0) : NULL;
  const cJSON *msg = c0 ? cJSON_GetObjectItemCaseSensitive(c0, "message") : NULL;
  if (!cJSON_IsObject(msg)) {
    kf_diag_error(diag, "%s: the reply is not a chat completion (%s)", url,
                  !j ? "not JSON" : !cJSON_IsArray(choices) ? "no \"choices\" array"
                                  : !c0 ? "\"choices\" is empty" : "no \"message\" object in choices[0]");
    cJSON_Delete(j);
    return KF_ERR_FORMAT;
  }
  kf_status st = KF_OK;
  const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
  if (cJSON_IsString(content) && !(out->content = dup_str(content->valuestring))) st = KF_ERR_NOMEM;
  const cJSON *fr = cJSON_GetObjectItemCaseSensitive(c0, "finish_reason");
  if (!st && cJSON_IsString(fr) && !(out->finish_reason = dup_str(fr->valuestring))) st = KF_ERR_NOMEM;
  const cJSON *usage = cJSON_GetObjectItemCaseSensitive(j, "usage");
  const cJSON *pt = cJSON_IsObject(usage) ? cJSON_GetObjectItemCaseSensitive(usage, "prompt_tokens") : NULL;
  const cJSON *ct = cJSON_IsObject(usage) ? cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens") : NULL;
  out->prompt_tokens = cJSON_IsNumber(pt) ? (int64_t)pt->valuedouble : -1;
  out->completion_tokens = cJSON_IsNumber(ct) ? (int64_t)ct->valuedouble : -1;
  if (out->completion_tokens < 0) { /* no usage: a token per 4 bytes of the message */
    char *ms = cJSON_PrintUnformatted(msg);
    out->completion_tokens = ms ? (int64_t)(strlen(ms) + 3) / 4 : 0;
    out->tokens_estimated = true;
    free(ms);
  }
  const cJSON *tc = cJSON_GetObjectItemCaseSensitive(msg, "tool_calls");
  int n = cJSON_IsArray(tc) ? cJSON_GetArraySize(tc) : 0;
  if (!st && n > 0) {
    out->calls = calloc((size_t)n, sizeof *out->calls);
    if (!out->calls) st = KF_ERR_NOMEM;
  }
  for (int i = 0; i < n && !st; i++) {
    const cJSON *call = cJSON_GetArrayItem(tc, i);
    kf_llm_tool_call *k = &out->calls[out->n_calls++];
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(call, "id");
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
    const cJSON *name = cJSON_IsObject(fn) ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
    const cJSON *args = cJSON_IsObject(fn) ? cJSON_GetObjectItemCaseSensitive(fn, "arguments") : NULL;
    k->id = dup_str(cJSON_IsString(id) ? id->valuestring : "");
    k->name = dup_str(cJSON_IsString(name) ? name->valuestring : "");
    if (!k->id || !k->name) {
      st = KF_ERR_NOMEM;
      break;
    }
    const char *why = NULL;
    if (!cJSON_IsString(name) || !*name->valuestring) why = "the tool call names no function";
    const char *as = cJSON_IsString(args) ? args->valuestring : NULL;
    while (as && (*as == ' ' || *as == '\n' || *as == '\t' || *as == '\r')) as++;
    if (as && !*as) { /* "": a call without arguments (as kfuse serve reads it) */
      k->args = cJSON_CreateObject();
      k->arguments = dup_str(args->valuestring);
      if (!k->args || !k->arguments) st = KF_ERR_NOMEM;
    } else if (cJSON_IsString(args)) {
      if (!(k->arguments = dup_str(args->valuestring))) {
        st = KF_ERR_NOMEM;
        break;
      }
      k->args = cJSON_Parse(args->valuestring);
      if (!why && !k->args) why = "the arguments are not valid JSON";
      else if (!why && !cJSON_IsObject(k->args)) why = "the arguments are not a JSON object";
    } else if (cJSON_IsObject(args)) { /* some servers send the object itself */
      k->args = cJSON_Duplicate(args, 1);
      k->arguments = cJSON_PrintUnformatted(args);
      if (!k->args || !k->arguments) st = KF_ERR_NOMEM;
    } else if (!why) {
      why = "the tool call has no arguments";
    }
    if (why) {
      cJSON_Delete(k->args);
      k->args = NULL;
      if (!(k->args_error = dup_str(why))) st = KF_ERR_NOMEM;
    }
  }
  if (!st) {
    out->message = cJSON_Duplicate(msg, 1);
    if (!out->message) st = KF_ERR_NOMEM;
  }
  cJSON_Delete(j);
  return st;
}

/* ---- the call -------------------------------------------------------------------- */

kf_status kf_llm_chat(const kf_llm_config *c, const cJSON *messages, const cJSON *tools,
                      kf_llm_reply *out, kf_diag *diag) {
  memset(out, 0, sizeof *out);
  out->prompt_tokens = out->completion_tokens = -1;
  double t0 = kf_now_s();
  if (!c || !c->endpoint || !*c->endpoint || !c->model || !*c->model || !cJSON_IsArray(messages) ||
      (tools && !cJSON_IsArray(tools)) || c->timeout_s <= 0 || c->max_retries < 0) {
    kf_diag_error(diag, "LLM request: an endpoint, a model, a message array and a positive timeout "
                        "are needed");
    return KF_ERR_ARG;
  }
  if (strncmp(c->endpoint, "http://", 7) != 0 && strncmp(c->endpoint, "https://", 8) != 0) {
    char shown[1024];
    kf_url_shown(c->endpoint, shown, sizeof shown);
    kf_diag_error(diag, "LLM endpoint '%s': expected an http:// or https:// URL", shown);
    return KF_ERR_ARG;
  }
  /* the URL as messages show it: no user information, no query */
  char shown[1024];
  const char *no_curl = NULL;
  const kf_curl_api *cu = kf_curl_get_api(&no_curl);
  if (!cu) {
    kf_url_shown(c->endpoint, shown, sizeof shown);
    kf_diag_error(diag, "LLM endpoint %s: %s", shown, no_curl);
    return KF_ERR_UNSUPPORTED;
  }
  size_t ne = strlen(c->endpoint);
  while (ne > 0 && c->endpoint[ne - 1] == '/') ne--;
  char *url = malloc(ne + 32);
  cJSON *req = cJSON_CreateObject();
  char *payload = NULL;
  kf_status st = url && req ? KF_OK : KF_ERR_NOMEM;
  if (!st) {
    snprintf(url, ne + 32, "%.*s/chat/completions", (int)ne, c->endpoint);
    kf_url_shown(url, shown, sizeof shown);
    static int warned; /* once a process: sessions send many requests */
    if (kf_url_cleartext_remote(c->endpoint) && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
      kf_diag_warn(diag, "LLM endpoint %s: plain http:// to a host other than this machine: the API key and "
                         "every request travel unencrypted (use https://)", shown);
    bool ok = cJSON_AddStringToObject(req, "model", c->model) != NULL;
    cJSON *m = ok ? cJSON_Duplicate(messages, 1) : NULL;
    ok = m && cJSON_AddItemToObject(req, "messages", m);
    if (ok && tools && cJSON_GetArraySize(tools) > 0) {
      cJSON *t = cJSON_Duplicate(tools, 1);
      ok = t && cJSON_AddItemToObject(req, "tools", t);
    }
    if (ok && c->temperature >= 0) ok = cJSON_AddNumberToObject(req, "temperature", c->temperature) != NULL;
    if (ok && c->max_tokens > 0) ok = cJSON_AddNumberToObject(req, "max_tokens", c->max_tokens) != NULL;
    if (ok) ok = (payload = cJSON_PrintUnformatted(req)) != NULL;
    if (!ok) st = KF_ERR_NOMEM;
  }
  cJSON_Delete(req);
  const char *kenv = c->api_key_env && *c->api_key_env ? c->api_key_env : "OPENAI_API_KEY";
  const char *key = secure_getenv(kenv);
  body b = {0};
  hdrs h;
  long status = 0;
  char why[512] = "", smsg[400] = "";
  double wait = c->backoff_s > 0 ? c->backoff_s : 0;
  outcome o = FATAL;
  for (int attempt = 0; !st; attempt++) {
    out->attempts++;
    double tw = kf_now_s();
    o = post_once(cu, c, url, payload, key, &b, &status, &h, why, sizeof why);
    out->wait_seconds += kf_now_s() - tw;
    if (o == SENT && !whole_reply(&b)) {
      /* a 200 whose body is not a whole chat completion (a proxy cut it
       * off): as a transient failure, tried again */
      snprintf(why, sizeof why, "HTTP %ld but the body (%zu bytes) is not a whole chat completion", status, b.len);
      o = TRANSIENT;
    }
    if (o != TRANSIENT || attempt >= c->max_retries) break;
    double w = wait * kf_jitter();
    if (h.retry_after >= 0) w = h.retry_after < c->retry_after_max_s ? h.retry_after : c->retry_after_max_s;
    if (c->deadline > 0 && kf_now_s() + w + 1 > c->deadline) {
      snprintf(why + strlen(why), sizeof why - strlen(why), "; no time left for another attempt");
      break;
    }
    kf_diag_note(diag, "LLM endpoint %s: %s; retrying in %.1f s (attempt %d of %d)", shown, why, w, attempt + 2,
                 c->max_retries + 1);
    tw = kf_now_s();
    kf_sleep_s(w);
    out->wait_seconds += kf_now_s() - tw;
    wait = wait * 2 < c->backoff_max_s ? wait * 2 : c->backoff_max_s;
  }
  if (!st && o != SENT) {
    server_message(&b, smsg, sizeof smsg);
    kf_diag_error(diag, "LLM endpoint %s: %s%s%s", shown, why, smsg,
                  o == TRANSIENT ? " (no attempt left)" : "");
    if (o == TRANSIENT && out->attempts > 1)
      kf_diag_note(diag, "%d attempts in %.1f s", out->attempts, kf_now_s() - t0);
    st = KF_ERR_IO;
  }
  if (!st) st = parse_reply(&b, out, diag, shown);
  if (!st && out->prompt_tokens < 0) { /* no usage: a token per 4 bytes of the request */
    out->prompt_tokens = (int64_t)(strlen(payload) + 3) / 4;
    out->tokens_estimated = true;
  }
  if (st && st != KF_ERR_IO && st != KF_ERR_FORMAT && st != KF_ERR_ARG)
    kf_diag_error(diag, "LLM endpoint %s: out of memory reading the reply", url ? shown : "?");
  if (st) {
    int a = out->attempts;
    double ws = out->wait_seconds;
    kf_llm_reply_fini(out);
    out->attempts = a;
    out->wait_seconds = ws;
    out->prompt_tokens = out->completion_tokens = -1;
  }
  out->seconds = kf_now_s() - t0;
  free(b.data);
  free(payload);
  free(url);
  return st;
}
