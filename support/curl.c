/* support/curl.c — libcurl loaded with dlopen, once per process
 * (kfuse/curl.h). Shared by the LLM client and the cache's remote so that
 * there is one loader, one global init and one message for a missing
 * library. Its own library (kfuse_curl) rather than part of kfuse_core:
 * the core has no external dependency, and this needs curl.h and libdl. */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <stdlib.h>

#include "kfuse/curl.h"

typedef CURLcode (*pfn_global_init)(long);

static kf_curl_api api;
static void *lib;
static char error[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
  const char *names[] = {"libcurl.so.4", "libcurl.so"};
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    snprintf(error, sizeof error, "libcurl is not available (dlopen libcurl.so.4: %s); install "
             "libcurl4 (Debian: apt-get install libcurl4)", e ? e : "not found");
    return;
  }
  pfn_global_init gi = (pfn_global_init)dlsym(lib, "curl_global_init");
  api.easy_init = (CURL * (*)(void)) dlsym(lib, "curl_easy_init");
  api.easy_setopt = (CURLcode(*)(CURL *, CURLoption, ...))dlsym(lib, "curl_easy_setopt");
  api.easy_perform = (CURLcode(*)(CURL *))dlsym(lib, "curl_easy_perform");
  api.easy_getinfo = (CURLcode(*)(CURL *, CURLINFO, ...))dlsym(lib, "curl_easy_getinfo");
  api.easy_reset = (void (*)(CURL *))dlsym(lib, "curl_easy_reset");
  api.easy_cleanup = (void (*)(CURL *))dlsym(lib, "curl_easy_cleanup");
  api.easy_strerror = (const char *(*)(CURLcode))dlsym(lib, "curl_easy_strerror");
  api.slist_append = (struct curl_slist * (*)(struct curl_slist *, const char *)) dlsym(lib, "curl_slist_append");
  api.slist_free_all = (void (*)(struct curl_slist *))dlsym(lib, "curl_slist_free_all");
  if (!gi || !api.easy_init || !api.easy_setopt || !api.easy_perform || !api.easy_getinfo || !api.easy_reset ||
      !api.easy_cleanup || !api.easy_strerror || !api.slist_append || !api.slist_free_all) {
    snprintf(error, sizeof error, "libcurl lacks the easy interface's symbols");
    dlclose(lib);
    lib = NULL;
    return;
  }
  CURLcode r = gi(CURL_GLOBAL_DEFAULT);
  if (r != CURLE_OK) {
    snprintf(error, sizeof error, "curl_global_init failed: %s", api.easy_strerror(r));
    dlclose(lib);
    lib = NULL;
  }
}

const kf_curl_api *kf_curl_get_api(const char **why) {
  pthread_once(&once, load);
  if (!lib) {
    if (why) *why = error;
    return NULL;
  }
  return &api;
}

double kf_curl_retry_after(const char *p, size_t n) {
  static const char key[] = "retry-after:";
  if (n <= sizeof key - 1 || strncasecmp(p, key, sizeof key - 1) != 0) return -1;
  char v[64];
  size_t m = n - (sizeof key - 1);
  if (m >= sizeof v) m = sizeof v - 1;
  memcpy(v, p + sizeof key - 1, m);
  v[m] = '\0';
  char *end;
  double s = strtod(v, &end);
  /* delta-seconds only; an HTTP date falls back to the backoff */
  return end != v && s >= 0 && isfinite(s) ? s : -1;
}

void kf_url_shown(const char *url, char *out, size_t n) {
  if (!n) return;
  out[0] = 0;
  if (!url) return;
  const char *p = url, *scheme_end = strstr(url, "://");
  size_t o = 0;
#define EMIT(ch)                                                                                   \
  do {                                                                                             \
    if (o + 1 < n) out[o++] = (ch);                                                                \
  } while (0)
  if (scheme_end && (size_t)(scheme_end - url) < strcspn(url, "/?#@")) {
    for (; p < scheme_end + 3; p++) EMIT(*p);
  }
  /* authority: drop everything up to the last '@' before the path */
  const char *auth_end = p + strcspn(p, "/?#");
  const char *at = NULL;
  for (const char *q = p; q < auth_end; q++)
    if (*q == '@') at = q;
  if (at) p = at + 1;
  for (; *p && *p != '?' && *p != '#'; p++) EMIT((unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p);
#undef EMIT
  out[o] = 0;
}

bool kf_url_cleartext_remote(const char *url) {
  if (!url || strncasecmp(url, "http://", 7) != 0) return false;
  const char *h = url + 7;
  size_t len = strcspn(h, "/?#");
  const char *at = NULL;
  for (const char *q = h; q < h + len; q++)
    if (*q == '@') at = q;
  if (at) {
    len -= (size_t)(at + 1 - h);
    h = at + 1;
  }
  /* the host without its port */
  size_t hl = len;
  if (h[0] == '[') {
    const char *rb = memchr(h, ']', len);
    hl = rb ? (size_t)(rb - h) + 1 : len;
  } else {
    const char *colon = memchr(h, ':', len);
    if (colon) hl = (size_t)(colon - h);
  }
  if (hl == 9 && strncasecmp(h, "localhost", 9) == 0) return false;
  if (hl == 5 && strncmp(h, "[::1]", 5) == 0) return false;
  if (hl >= 4 && strncmp(h, "127.", 4) == 0) {
    /* 127.a.b.c, digits and dots only */
    bool ok = true;
    for (size_t i = 4; i < hl && ok; i++) ok = (h[i] >= '0' && h[i] <= '9') || h[i] == '.';
    if (ok) return false;
  }
  return true;
}
