/* cache/remote.c — the kernel cache's HTTP remote (docs/CACHE.md "The
 * remote").
 *
 * Entries in their wire form (cache/wire.c) at URL/<first two hex digits
 * of the key>/<key>: GET reads one (404: a miss), HEAD asks whether one is
 * there, PUT writes one. That is the convention ccache, sccache and
 * bazel-remote share, so any plain WebDAV server (nginx with
 * create_full_put_path on) or one of those caches' servers can hold a
 * kfuse cache.
 *
 * The remote is an accelerator, never a dependency: a build that the local
 * cache or the built-in policy can serve must not fail or stall because
 * of it. So every failure here is a warning and a miss, one operation
 * (retries and their waits included) never takes longer than timeout_s,
 * and a remote that failed after its retries is marked down and not asked
 * again in the process: a dead remote costs one timeout per process, and
 * one warning. A corrupt download is a warning naming the key and a miss;
 * it is never written to the local store (the decoder checks everything
 * first).
 *
 * Credentials come from the environment at each request and go only into
 * the request: never into a diagnostic, a stats field or a file. URLs with
 * user:password@ are refused, so no diagnostic can show one.
 *
 * libcurl comes through support's loader (kfuse/curl.h). One easy handle
 * per remote, reset between requests, keeps the connection alive across a
 * push of many entries; a mutex serialises requests, which also makes
 * threads that wait behind a failing request see the remote down at once
 * rather than each paying the timeout. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "kfuse/curl.h"

#include "cache_int.h"

#define ENV_BEARER "KFUSE_CACHE_REMOTE_BEARER"
#define ENV_USER "KFUSE_CACHE_REMOTE_USER"
#define ENV_PASSWORD "KFUSE_CACHE_REMOTE_PASSWORD"

struct kf_cache_remote {
  char *url;        /* the base, without a trailing '/' */
  char *name;       /* kf_cache_endpoint_name(url): what diagnostics show */
  kf_cache_remote_options o;
  const kf_curl_api *cu;
  CURL *h;
  pthread_mutex_t mu; /* requests and stats */
  kf_cache_remote_stats st;
};

void kf_cache_remote_options_init(kf_cache_remote_options *o) {
  memset(o, 0, sizeof *o);
  o->timeout_s = 10.0;
  o->connect_timeout_s = 5.0;
  o->retries = 2;
  o->backoff_s = 0.25;
  o->max_body_bytes = (int64_t)256 << 20;
}

/* ---- open / close --------------------------------------------------------- */

static bool has_ctl(const char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f) return true;
  return false;
}

kf_status kf_cache_remote_open(const kf_cache_remote_options *o, kf_cache_remote **out, kf_diag *diag) {
  *out = NULL;
  const char *url = o ? o->url : NULL;
  if (!url || !url[0]) {
    kf_diag_error(diag, "cache remote: no URL");
    return KF_ERR_ARG;
  }
  char shown[1024];
  kf_cache_endpoint_name(url, shown, sizeof shown);
  if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
    kf_diag_error(diag, "cache remote '%s': expected an http:// or https:// URL", shown);
    return KF_ERR_ARG;
  }
  const char *host = strstr(url, "://") + 3;
  size_t auth_len = strcspn(host, "/?#");
  if (memchr(host, '@', auth_len)) {
    kf_diag_error(diag, "cache remote %s: the URL holds credentials; give them in the environment "
                  "(" ENV_BEARER ", or " ENV_USER " and " ENV_PASSWORD ")", shown);
    return KF_ERR_ARG;
  }
  if (strpbrk(url, "?#") || has_ctl(url) || strchr(url, ' ')) {
    kf_diag_error(diag, "cache remote %s: the URL may not hold a query, a fragment, spaces or control "
                  "characters (entries live at URL/ab/KEY)", shown);
    return KF_ERR_ARG;
  }
  if (strlen(url) > 2048) {
    kf_diag_error(diag, "cache remote %.80s...: the URL is longer than 2048 characters", shown);
    return KF_ERR_ARG;
  }
  if (auth_len == 0) {
    kf_diag_error(diag, "cache remote '%s': the URL has no host", shown);
    return KF_ERR_ARG;
  }
  if (kf_url_cleartext_remote(url))
    kf_diag_warn(diag, "cache remote %s: plain http:// to a host other than this machine: its credentials and "
                       "the entries travel unencrypted, and anyone on the path can change what you pull (use "
                       "https://)", shown);
  if (!(o->timeout_s > 0) || !(o->connect_timeout_s > 0) || o->retries < 0 || !(o->backoff_s >= 0) ||
      o->max_body_bytes <= 0 || !isfinite(o->timeout_s) || !isfinite(o->connect_timeout_s) ||
      !isfinite(o->backoff_s)) {
    kf_diag_error(diag, "cache remote %s: timeouts must be positive, retries and backoff not negative", shown);
    return KF_ERR_ARG;
  }
  /* the credentials are checked here, so a misconfiguration is an error
   * at once rather than a warning per request; they are read again at
   * each request and not kept */
  const char *bearer = secure_getenv(ENV_BEARER), *user = secure_getenv(ENV_USER), *pw = secure_getenv(ENV_PASSWORD);
  if (bearer && bearer[0] && has_ctl(bearer)) {
    kf_diag_error(diag, "cache remote %s: " ENV_BEARER " holds control characters", shown);
    return KF_ERR_ARG;
  }
  if (!(bearer && bearer[0]) && user && user[0] && !pw) {
    kf_diag_error(diag, "cache remote %s: " ENV_USER " is set but " ENV_PASSWORD " is not", shown);
    return KF_ERR_ARG;
  }
  const char *no_curl = NULL;
  const kf_curl_api *cu = kf_curl_get_api(&no_curl);
  if (!cu) {
    kf_diag_error(diag, "cache remote %s: %s", shown, no_curl);
    return KF_ERR_UNSUPPORTED;
  }
  kf_cache_remote *r = calloc(1, sizeof *r);
  if (!r) return KF_ERR_NOMEM;
  r->o = *o;
  r->o.url = NULL;
  r->cu = cu;
  size_t n = strlen(url);
  while (n > 0 && url[n - 1] == '/') n--;
  r->url = malloc(n + 1);
  r->name = malloc(strlen(shown) + 1);
  if (!r->url || !r->name) goto nomem;
  memcpy(r->url, url, n);
  r->url[n] = 0;
  kf_cache_endpoint_name(r->url, r->name, strlen(shown) + 1);
  r->h = cu->easy_init();
  if (!r->h) {
    kf_diag_error(diag, "cache remote %s: curl_easy_init failed", shown);
    free(r->url);
    free(r->name);
    free(r);
    return KF_ERR_INTERNAL;
  }
  if (pthread_mutex_init(&r->mu, NULL) != 0) {
    cu->easy_cleanup(r->h);
    goto nomem;
  }
  *out = r;
  return KF_OK;
nomem:
  free(r->url);
  free(r->name);
  free(r);
  return KF_ERR_NOMEM;
}

void kf_cache_remote_close(kf_cache_remote *r) {
  if (!r) return;
  r->cu->easy_cleanup(r->h);
  pthread_mutex_destroy(&r->mu);
  free(r->url);
  free(r->name);
  free(r);
}

const char *kf_cache_remote_url(const kf_cache_remote *r) { return r->name; }

void kf_cache_remote_get_stats(kf_cache_remote *r, kf_cache_remote_stats *out) {
  pthread_mutex_lock(&r->mu);
  *out = r->st;
  pthread_mutex_unlock(&r->mu);
}

/* ---- one request ------------------------------------------------------------ */

typedef enum method { M_GET, M_HEAD, M_PUT } method;
static const char *const method_name[] = {"GET", "HEAD", "PUT"};

/* What one request moves: the reply's body (bounded), the upload. */
typedef struct xfer {
  char *data;
  size_t len, cap, max;
  bool overflow, oom;
  const char *up;
  size_t up_len, up_pos;
  double retry_after; /* seconds; < 0: none */
} xfer;

static size_t on_data(char *p, size_t size, size_t n, void *user) {
  xfer *x = user;
  size_t k = size * n;
  if (k > x->max - x->len) {
    x->overflow = true;
    return 0; /* aborts the transfer: a hostile server cannot fill memory */
  }
  if (x->len + k > x->cap) {
    size_t cap = x->cap ? x->cap : 64 * 1024;
    while (cap < x->len + k) cap *= 2;
    char *d = realloc(x->data, cap);
    if (!d) {
      x->oom = true;
      return 0;
    }
    x->data = d;
    x->cap = cap;
  }
  memcpy(x->data + x->len, p, k);
  x->len += k;
  return k;
}

static size_t on_read(char *p, size_t size, size_t n, void *user) {
  xfer *x = user;
  size_t k = size * n, left = x->up_len - x->up_pos;
  if (k > left) k = left;
  memcpy(p, x->up + x->up_pos, k);
  x->up_pos += k;
  return k;
}

static size_t on_header(char *p, size_t size, size_t n, void *user) {
  xfer *x = user;
  size_t k = size * n;
  double s = kf_curl_retry_after(p, k);
  if (s >= 0) x->retry_after = s;
  return k;
}

typedef enum outcome {
  O_OK,        /* 2xx */
  O_MISS,      /* 404 on GET or HEAD */
  O_TRANSIENT, /* worth retrying: 5xx, 408, 429, timeouts, connection failures */
  O_FATAL,     /* anything else */
  O_TOO_LARGE, /* the body exceeds max_body_bytes */
} outcome;

static bool transient_curl(CURLcode c) {
  switch (c) {
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_RESOLVE_PROXY:
  case CURLE_COULDNT_CONNECT:
  case CURLE_OPERATION_TIMEDOUT:
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_GOT_NOTHING:
  case CURLE_PARTIAL_FILE:
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
    return true;
  default:
    return false;
  }
}

/* One attempt of m on url within tmo_ms. *status: the HTTP status, 0 when
 * none came. why: the failure, without credentials (none can be in url). */
static outcome attempt(kf_cache_remote *r, method m, const char *url, xfer *x, long tmo_ms, long *status,
                       char *why, size_t nwhy) {
  const kf_curl_api *cu = r->cu;
  CURL *h = r->h;
  x->len = 0;
  x->overflow = x->oom = false;
  x->up_pos = 0;
  x->retry_after = -1;
  *status = 0;
  cu->easy_reset(h); /* options gone; the connection and DNS cache stay */

  struct curl_slist *hl = NULL;
  char *auth = NULL;
  outcome out = O_FATAL;
  const char *bearer = secure_getenv(ENV_BEARER), *user = secure_getenv(ENV_USER), *pw = secure_getenv(ENV_PASSWORD);
  bool use_bearer = bearer && bearer[0], use_basic = !use_bearer && user && user[0] && pw;
  /* no "Expect: 100-continue" round trip before a PUT's body */
  const char *fixed[] = {"Expect:", m == M_PUT ? "Content-Type: application/octet-stream" : NULL};
  for (size_t i = 0; i < 2; i++) {
    if (!fixed[i]) continue;
    struct curl_slist *n = cu->slist_append(hl, fixed[i]);
    if (!n) goto nomem;
    hl = n;
  }
  if (use_bearer) {
    size_t n = strlen(bearer) + 32;
    if (!(auth = malloc(n))) goto nomem;
    snprintf(auth, n, "Authorization: Bearer %s", bearer);
    struct curl_slist *l = cu->slist_append(hl, auth);
    if (!l) goto nomem;
    hl = l;
  }
  long ctmo = (long)(r->o.connect_timeout_s * 1000.0);
  if (ctmo > tmo_ms) ctmo = tmo_ms;
  if (ctmo < 1) ctmo = 1;
  CURLcode c = CURLE_OK;
#define SET(opt, val)                                                                              \
  do {                                                                                             \
    if (c == CURLE_OK) c = cu->easy_setopt(h, opt, val);                                           \
  } while (0)
  SET(CURLOPT_URL, url);
  SET(CURLOPT_NOSIGNAL, 1L);
  SET(CURLOPT_FOLLOWLOCATION, 0L); /* a redirect could take the credentials elsewhere */
  SET(CURLOPT_USERAGENT, "kfuse-cache");
  SET(CURLOPT_TIMEOUT_MS, tmo_ms);
  SET(CURLOPT_CONNECTTIMEOUT_MS, ctmo);
  SET(CURLOPT_WRITEFUNCTION, on_data);
  SET(CURLOPT_WRITEDATA, x);
  SET(CURLOPT_HEADERFUNCTION, on_header);
  SET(CURLOPT_HEADERDATA, x);
  SET(CURLOPT_HTTPHEADER, hl);
  if (m == M_GET) {
    SET(CURLOPT_HTTPGET, 1L);
    SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)x->max);
  } else if (m == M_HEAD) {
    SET(CURLOPT_NOBODY, 1L);
  } else {
    SET(CURLOPT_UPLOAD, 1L);
    SET(CURLOPT_READFUNCTION, on_read);
    SET(CURLOPT_READDATA, x);
    SET(CURLOPT_INFILESIZE_LARGE, (curl_off_t)x->up_len);
  }
  if (use_basic) {
    SET(CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
    SET(CURLOPT_USERNAME, user);
    SET(CURLOPT_PASSWORD, pw);
  }
#undef SET
  if (c == CURLE_OK) {
    /* only http and https, also for a libcurl built with more; an older
     * libcurl without the option has the scheme check of open */
    CURLcode pc = cu->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (pc != CURLE_OK && pc != CURLE_UNKNOWN_OPTION) c = pc;
  }
  if (c != CURLE_OK) {
    snprintf(why, nwhy, "setting up the request: %s", cu->easy_strerror(c));
    goto done;
  }
  c = cu->easy_perform(h);
  if (c != CURLE_OK) {
    if (x->overflow || c == CURLE_FILESIZE_EXCEEDED) {
      snprintf(why, nwhy, "the body exceeds %lld bytes", (long long)x->max);
      out = O_TOO_LARGE;
    } else if (x->oom) {
      snprintf(why, nwhy, "out of memory reading the body");
    } else {
      snprintf(why, nwhy, "%s", cu->easy_strerror(c));
      out = transient_curl(c) ? O_TRANSIENT : O_FATAL;
    }
    goto done;
  }
  c = cu->easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
  if (c != CURLE_OK) {
    snprintf(why, nwhy, "no HTTP status: %s", cu->easy_strerror(c));
    goto done;
  }
  if (*status >= 200 && *status < 300) {
    out = O_OK;
  } else if (*status == 404 && m != M_PUT) {
    out = O_MISS;
  } else {
    snprintf(why, nwhy, "HTTP %ld", *status);
    out = *status == 408 || *status == 429 || (*status >= 500 && *status < 600) ? O_TRANSIENT : O_FATAL;
  }
  goto done;
nomem:
  snprintf(why, nwhy, "out of memory");
done:
  if (hl) cu->slist_free_all(hl);
  if (auth) {
    memset(auth, 0, strlen(auth));
    free(auth);
  }
  return out;
}


/* m on url with the retries, all within timeout_s. Called with r->mu held. */
static outcome request(kf_cache_remote *r, method m, const char *url, xfer *x, long *status, char *why,
                       size_t nwhy) {
  double t0 = kf_now_s(), deadline = t0 + r->o.timeout_s, wait = r->o.backoff_s;
  char last[400] = "";
  for (int a = 0;; a++) {
    long tmo = (long)((deadline - kf_now_s()) * 1000.0);
    if (tmo < 1) tmo = 1;
    r->st.requests++;
    if (a) r->st.retries++;
    outcome o = attempt(r, m, url, x, tmo, status, last, sizeof last);
    if (o != O_TRANSIENT) {
      snprintf(why, nwhy, "%s", last);
      return o;
    }
    double w = x->retry_after >= 0 ? x->retry_after : wait * kf_jitter();
    const char *stop = NULL;
    if (a >= r->o.retries)
      stop = "no retry left";
    else if (kf_now_s() + w >= deadline)
      stop = "no time left for a retry within the timeout";
    if (stop) {
      snprintf(why, nwhy, "%s (%d attempt%s in %.1f s, %s)", last, a + 1, a ? "s" : "", kf_now_s() - t0, stop);
      return o;
    }
    kf_sleep_s(w);
    wait *= 2;
  }
}

/* URL/ab/KEY into out[n] */
static void object_url(const char *base, const char *key, char *out, size_t n) {
  snprintf(out, n, "%s/%.2s/%s", base, key, key);
}

static const char *auth_hint(long status) {
  return status == 401 || status == 403 ? " (check " ENV_BEARER ", or " ENV_USER " and " ENV_PASSWORD ")" : "";
}

/* The failure that takes the remote out for the rest of the process: the
 * one warning a dead remote costs. */
static void mark_down(kf_cache_remote *r, method m, const char *key, const char *why, long status, kf_diag *diag) {
  r->st.down = true;
  kf_diag_warn(diag, "cache remote %s: %s of entry %.16s failed: %s; treated as a miss, and the remote is not "
               "used again in this process%s", r->name, method_name[m], key, why, auth_hint(status));
}

/* ---- get, head, put --------------------------------------------------------- */

/* A kf_diag_fn joining messages with "; ", for a warning that quotes them */
static void join_msg(void *user, kf_diag_level level, const char *msg) {
  (void)level;
  kf_strbuf *b = user;
  if (b->len) kf_strbuf_append(b, "; ", 2);
  kf_strbuf_append(b, msg, strlen(msg));
}

static kf_status check_key(const char *what, const char *key, kf_diag *diag) {
  if (kf_cache_key_hex_valid(key)) return KF_OK;
  kf_diag_error(diag, "cache remote %s: key '%.70s' is not 64 lowercase hex digits", what, key ? key : "(null)");
  return KF_ERR_ARG;
}

kf_status kf_cache_remote_get(kf_cache_remote *r, const char *key_hex, kf_cache_entry **out, kf_diag *diag) {
  *out = NULL;
  kf_status s = check_key("get", key_hex, diag);
  if (s != KF_OK) return s;
  char url[4200], shown[4200];
  object_url(r->url, key_hex, url, sizeof url);
  object_url(r->name, key_hex, shown, sizeof shown);
  xfer x = {.max = (size_t)r->o.max_body_bytes};
  char why[600];
  long status = 0;
  kf_strbuf msg;
  kf_strbuf_init(&msg);
  pthread_mutex_lock(&r->mu);
  if (r->st.down) {
    r->st.misses++;
    goto done;
  }
  outcome o = request(r, M_GET, url, &x, &status, why, sizeof why);
  if (o == O_OK) {
    kf_diag quiet;
    kf_diag_init(&quiet, join_msg, &msg);
    kf_cache_entry *e = NULL;
    kf_status d = kf_cache_entry_decode(x.data ? x.data : "", x.len, &e, &quiet);
    if (d == KF_ERR_NOMEM) {
      s = d;
    } else if (d != KF_OK) {
      kf_diag_warn(diag, "cache remote: entry %s at %s is corrupt (%s): treated as a miss", key_hex, shown,
                   msg.data ? msg.data : "?");
      r->st.corrupt++;
      r->st.misses++;
    } else if (strcmp(e->key, key_hex) != 0) {
      kf_diag_warn(diag, "cache remote: %s holds entry %.16s, not %s: treated as a miss", shown, e->key, key_hex);
      kf_cache_entry_destroy(e);
      r->st.corrupt++;
      r->st.misses++;
    } else {
      r->st.hits++;
      *out = e;
    }
  } else if (o == O_MISS) {
    r->st.misses++;
  } else if (o == O_TOO_LARGE) {
    kf_diag_warn(diag, "cache remote: entry %s at %s: %s: treated as a miss", key_hex, shown, why);
    r->st.corrupt++;
    r->st.misses++;
  } else {
    mark_down(r, M_GET, key_hex, why, status, diag);
    r->st.misses++;
  }
done:
  pthread_mutex_unlock(&r->mu);
  kf_strbuf_fini(&msg);
  free(x.data);
  return s;
}

kf_status kf_cache_remote_head(kf_cache_remote *r, const char *key_hex, bool *present, kf_diag *diag) {
  *present = false;
  kf_status s = check_key("head", key_hex, diag);
  if (s != KF_OK) return s;
  char url[4200];
  object_url(r->url, key_hex, url, sizeof url);
  xfer x = {.max = (size_t)r->o.max_body_bytes};
  char why[600];
  long status = 0;
  pthread_mutex_lock(&r->mu);
  if (!r->st.down) {
    outcome o = request(r, M_HEAD, url, &x, &status, why, sizeof why);
    if (o == O_OK)
      *present = true;
    else if (o != O_MISS)
      mark_down(r, M_HEAD, key_hex, why, status, diag);
  }
  pthread_mutex_unlock(&r->mu);
  free(x.data);
  return KF_OK;
}

kf_status kf_cache_remote_put(kf_cache_remote *r, const kf_cache_entry *e, kf_diag *diag) {
  kf_status s = check_key("put", e->key, diag);
  if (s != KF_OK) return s;
  /* the entry as the store would hold it: a new one gets its hash and
   * creation time here, one from the store must still match its hash */
  kf_cache_entry w = *e;
  if (!w.endpoint) w.endpoint = "";
  if (!w.created_ms) w.created_ms = kf_cache_now_ms();
  char why[600];
  if (e->payload_hash[0]) {
    if (kf_cache_entry_corrupt(&w, why, sizeof why)) {
      kf_diag_error(diag, "cache remote put: entry %.16s is corrupt (%s): not sent", e->key, why);
      return KF_ERR_ARG;
    }
  } else {
    kf_cache_payload_hash(&w, w.payload_hash);
    if (kf_cache_entry_corrupt(&w, why, sizeof why)) {
      kf_diag_error(diag, "cache remote put: entry %.16s: %s", e->key, why);
      return KF_ERR_ARG;
    }
  }
  if (!w.gpu || !w.gpu[0] || !w.policy || !w.policy[0] || strchr(w.endpoint, '@') || strchr(w.endpoint, '?')) {
    kf_diag_error(diag, "cache remote put: entry %.16s: gpu and policy are required, and the endpoint may not "
                  "hold credentials", e->key);
    return KF_ERR_ARG;
  }
  w.bytes = kf_cache_payload_bytes(&w);
  w.hits = 0;

  pthread_mutex_lock(&r->mu);
  bool skip = r->o.read_only || r->st.down || r->st.puts_stopped;
  if (skip) r->st.skipped++;
  pthread_mutex_unlock(&r->mu);
  if (skip) return KF_OK; /* read-only: nothing is ever sent */

  kf_strbuf body;
  kf_strbuf_init(&body);
  if ((s = kf_cache_entry_encode(&w, &body, diag)) != KF_OK) {
    kf_strbuf_fini(&body);
    return s;
  }
  char url[4200], shown[4200];
  object_url(r->url, w.key, url, sizeof url);
  object_url(r->name, w.key, shown, sizeof shown);
  pthread_mutex_lock(&r->mu);
  if (body.len > (size_t)r->o.max_body_bytes) {
    kf_diag_warn(diag, "cache remote: entry %s is %zu bytes, over the remote's limit of %lld: not sent", w.key,
                 body.len, (long long)r->o.max_body_bytes);
    r->st.put_failures++;
  } else if (r->st.down || r->st.puts_stopped) {
    r->st.skipped++; /* went down while this one was being encoded */
  } else {
    xfer x = {.max = 64 * 1024, .up = body.data, .up_len = body.len}; /* a PUT's reply is a status page */
    long status = 0;
    outcome o = request(r, M_PUT, url, &x, &status, why, sizeof why);
    free(x.data);
    if (o == O_OK) {
      r->st.puts++;
    } else {
      r->st.put_failures++;
      if (o == O_TRANSIENT || status == 0) {
        mark_down(r, M_PUT, w.key, why, status, diag);
      } else if (status == 413) {
        kf_diag_warn(diag, "cache remote: PUT %s: %s (the server's body limit): entry not stored", shown, why);
      } else {
        /* a refusal (401, 403, 405, 409, ...) repeats for every entry:
         * say it once, and stop putting; gets go on */
        r->st.puts_stopped = true;
        kf_diag_warn(diag, "cache remote: PUT %s refused: %s; no further entry is put to %s in this process%s",
                     shown, why, r->name,
                     status == 401 || status == 403 ? auth_hint(status)
                     : status == 405 || status == 409
                         ? " (the server must accept PUT and create directories: nginx dav_methods PUT, "
                           "create_full_put_path on)"
                         : "");
      }
    }
  }
  pthread_mutex_unlock(&r->mu);
  kf_strbuf_fini(&body);
  return KF_OK;
}

/* ---- push ------------------------------------------------------------------- */

typedef struct keylist {
  char (*k)[65];
  size_t n, cap;
  bool oom;
} keylist;

static int collect_key(void *user, const kf_cache_entry *e) {
  keylist *l = user;
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    void *k = realloc(l->k, cap * sizeof *l->k);
    if (!k) {
      l->oom = true;
      return 1;
    }
    l->k = k;
    l->cap = cap;
  }
  memcpy(l->k[l->n++], e->key, 65);
  return 0;
}

kf_status kf_cache_remote_push(kf_cache_remote *r, kf_cache *local, kf_cache_push_counts *counts, kf_diag *diag) {
  kf_cache_push_counts k = {0, 0, 0, 0};
  if (counts) *counts = k;
  if (r->o.read_only) {
    kf_diag_error(diag, "cache remote %s is read-only: nothing can be pushed", r->name);
    return KF_ERR_ARG;
  }
  /* the keys first: no network round trip inside the store's read
   * transaction (it would hold back the WAL's checkpoints) */
  keylist l = {0};
  kf_status s = kf_cache_list(local, collect_key, &l, diag);
  if (s == KF_OK && l.oom) s = KF_ERR_NOMEM;
  for (size_t i = 0; s == KF_OK && i < l.n; i++) {
    const char *key = l.k[i];
    kf_cache_remote_stats st;
    kf_cache_remote_get_stats(r, &st);
    k.entries++;
    if (st.down || st.puts_stopped) { /* already said; the rest cannot go either */
      k.failed++;
      continue;
    }
    bool present = false;
    if ((s = kf_cache_remote_head(r, key, &present, diag)) != KF_OK) break;
    if (present) {
      k.present++;
      continue;
    }
    kf_cache_entry *e = NULL;
    if ((s = kf_cache_read_entry(local, key, &e, diag)) != KF_OK) break;
    if (!e) { /* removed by another process since the listing */
      k.entries--;
      continue;
    }
    char why[160];
    if (kf_cache_entry_corrupt(e, why, sizeof why)) {
      kf_diag_warn(diag, "%s/index.sqlite: cache entry %.16s is corrupt (%s): not pushed (kfuse cache verify "
                   "removes it)", kf_cache_dir(local), key, why);
      k.failed++;
      kf_cache_entry_destroy(e);
      continue;
    }
    int64_t before = st.puts;
    s = kf_cache_remote_put(r, e, diag);
    kf_cache_entry_destroy(e);
    if (s != KF_OK) break;
    kf_cache_remote_get_stats(r, &st);
    if (st.puts > before)
      k.pushed++;
    else
      k.failed++;
  }
  free(l.k);
  if (counts) *counts = k;
  return s;
}
