/* tests/cache/synth_entry.h — the key fields of a synthetic cache entry,
 * for the cache's tests (tests/unit/test_cache.c, test_cache_remote.c,
 * tests/cache/remote_client.c): canonical text as given, precision
 * "default", arch sm_90a, the toolkit given, no driver class, this codegen
 * version; e's key computed from them. Nothing here is a real kernel. */
#ifndef KFUSE_TEST_SYNTH_ENTRY_H
#define KFUSE_TEST_SYNTH_ENTRY_H

#include <string.h>

#include "kfuse/cache.h"

static inline kf_status synth_entry_key(kf_cache_entry *e, char *canonical, const char *toolkit, kf_diag *diag) {
  kf_cache_key_fields f;
  kf_cache_key_fields_init(&f);
  f.canonical = canonical;
  f.precision = "default";
  f.arch = "sm_90a";
  f.toolkit = toolkit;
  f.driver = "";
  kf_cache_key k;
  kf_status st = kf_cache_key_make(&f, &k, diag);
  if (st != KF_OK) return st;
  memcpy(e->key, k.hex, 65);
  e->canonical = canonical;
  e->precision = "default";
  e->arch = "sm_90a";
  e->toolkit = (char *)toolkit;
  e->driver = "";
  e->codegen = f.codegen;
  return KF_OK;
}

#endif
