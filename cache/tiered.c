/* cache/tiered.c — the local store and the remote as one cache, the way
 * the compiler uses them (docs/CACHE.md "Both tiers"): look up locally
 * first, then remotely, writing a remote hit through into the local store
 * so the next build on this machine needs no network; store locally and,
 * unless the remote is read-only, remotely too.
 *
 * The local store stays the authority on errors (its failures are the
 * caller's); the remote can only ever add hits: its failures are warnings
 * (cache/remote.c). */
#include <string.h>

#include "cache_int.h"

static const char *text_of(kf_strbuf *b) {
  while (b->len && b->data[b->len - 1] == '\n') b->data[--b->len] = 0;
  return b->data ? b->data : "";
}

kf_status kf_cache_fetch(kf_cache *local, kf_cache_remote *remote, const char *key_hex, kf_cache_entry **out,
                         int *source, kf_diag *diag) {
  *out = NULL;
  if (source) *source = KF_CACHE_MISS;
  if (!kf_cache_key_hex_valid(key_hex)) {
    kf_diag_error(diag, "cache fetch: key '%.70s' is not 64 lowercase hex digits", key_hex ? key_hex : "(null)");
    return KF_ERR_ARG;
  }
  kf_cache_entry *e = NULL;
  kf_status s;
  if (local) {
    if ((s = kf_cache_get(local, key_hex, &e, diag)) != KF_OK) return s;
    if (e) {
      *out = e;
      if (source) *source = KF_CACHE_LOCAL;
      return KF_OK;
    }
  }
  if (!remote) return KF_OK;
  if ((s = kf_cache_remote_get(remote, key_hex, &e, diag)) != KF_OK) return s;
  if (!e) return KF_OK;
  if (local) {
    /* written through as used now, so LRU eviction keeps it for a while */
    e->last_used_ms = kf_cache_now_ms();
    kf_strbuf msg;
    kf_strbuf_init(&msg);
    kf_diag quiet;
    kf_diag_init(&quiet, kf_diag_to_strbuf, &msg);
    if (kf_cache_put(local, e, NULL, &quiet) != KF_OK)
      kf_diag_warn(diag, "cache: entry %.16s from the remote could not be written to the local store (used "
                   "all the same): %s", key_hex, text_of(&msg));
    kf_strbuf_fini(&msg);
  }
  *out = e;
  if (source) *source = KF_CACHE_REMOTE;
  return KF_OK;
}

kf_status kf_cache_store(kf_cache *local, kf_cache_remote *remote, const kf_cache_entry *e,
                         kf_cache_put_result *out, kf_diag *diag) {
  kf_cache_put_result res = KF_CACHE_PUT_NEW;
  if (out) *out = res;
  kf_status s;
  /* one creation time for both copies, so they list alike */
  kf_cache_entry w = *e;
  if (!w.created_ms) w.created_ms = kf_cache_now_ms();
  e = &w;
  if (local && (s = kf_cache_put(local, e, &res, diag)) != KF_OK) return s;
  if (out) *out = res;
  /* a kept entry is one at least as good that this process or another
   * already stored, and stored remotely with it: sending the worse one
   * would overwrite it there (the remote keeps the last put) */
  if (!remote || res == KF_CACHE_PUT_KEPT) return KF_OK;
  return kf_cache_remote_put(remote, e, diag);
}
