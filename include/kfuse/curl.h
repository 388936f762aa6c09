/* kfuse/curl.h — libcurl's easy interface, loaded at run time with dlopen
 * (support/curl.c), for every part of kfuse that is an HTTP client: the
 * LLM client (agent/llm.c) and the kernel cache's remote (cache/remote.c).
 *
 * kfuse never links libcurl: it runs where libcurl is absent until an HTTP
 * endpoint is used, and then says what to install. curl/curl.h is needed
 * to build only, for its types and constants. The library is loaded and
 * curl_global_init'ed once per process, thread-safely; the table below is
 * then read-only and shared. */
#ifndef KFUSE_CURL_H
#define KFUSE_CURL_H

#include <stdbool.h>
#include <stddef.h>

#include <curl/curl.h>

#include "kfuse/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The libcurl functions kfuse calls, resolved from the loaded library. */
typedef struct kf_curl_api {
  CURL *(*easy_init)(void);
  CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
  CURLcode (*easy_perform)(CURL *);
  CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
  void (*easy_reset)(CURL *);
  void (*easy_cleanup)(CURL *);
  const char *(*easy_strerror)(CURLcode);
  struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
  void (*slist_free_all)(struct curl_slist *);
} kf_curl_api;

/* The loaded interface (borrowed, valid for the process), or NULL with the
 * reason in *why (a static string: which library is missing and which
 * Debian package provides it). The first call loads "libcurl.so.4", then
 * "libcurl.so", and runs curl_global_init; later calls only return. */
KF_API const kf_curl_api *kf_curl_get_api(const char **why);

/* A response header line p[0..n) (as CURLOPT_HEADERFUNCTION gets it): when
 * it is "Retry-After: <delta-seconds>", the seconds; else -1 (an HTTP date
 * too: the caller's backoff applies). */
KF_API double kf_curl_retry_after(const char *p, size_t n);

/* url as it may be shown (messages, reports, trajectories, cache rows):
 * the scheme, host, port and path, without the user information
 * ("user:password@") or the query and fragment, which may hold secrets. */
KF_API void kf_url_shown(const char *url, char *out, size_t n);

/* True when url is plain http:// to a host other than this machine
 * (localhost, 127.0.0.0/8, [::1]): credentials and requests sent there
 * travel unencrypted. */
KF_API bool kf_url_cleartext_remote(const char *url);

#ifdef __cplusplus
}
#endif
#endif
