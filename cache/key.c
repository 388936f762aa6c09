/* cache/key.c — the cache key (a BLAKE3 over the fields that decide a
 * group's code), the payload hash that every read checks, the directory
 * the store lives in, and the endpoint names that may be stored.
 *
 * Both hashes run over a tagged, length-prefixed encoding: each field is
 * its one-byte tag, its length as 8 little-endian bytes (all ones for an
 * absent field) and its bytes, so no two different field lists encode to
 * the same byte string. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/blake3.h>

#include "cache_int.h"
#include "kfuse/curl.h"

void kf_cache_field_header(uint8_t hdr[9], char tag, uint64_t len) {
  hdr[0] = (uint8_t)tag;
  for (int i = 0; i < 8; i++) hdr[1 + i] = (uint8_t)(len >> (8 * i));
}

void kf_cache_format_ms(double ms, char out[40]) { snprintf(out, 40, "%.17g", ms); }

bool kf_cache_key_hex_valid(const char *k) {
  if (!k || strlen(k) != 64) return false;
  for (int i = 0; i < 64; i++)
    if (!((k[i] >= '0' && k[i] <= '9') || (k[i] >= 'a' && k[i] <= 'f'))) return false;
  return true;
}

static void put_field(llvm_blake3_hasher *h, char tag, const void *p, size_t n, bool absent) {
  uint8_t hdr[9];
  kf_cache_field_header(hdr, tag, absent ? UINT64_MAX : (uint64_t)n);
  llvm_blake3_hasher_update(h, hdr, sizeof hdr);
  if (!absent && n) llvm_blake3_hasher_update(h, p, n);
}

static void put_str(llvm_blake3_hasher *h, char tag, const char *s) {
  put_field(h, tag, s, s ? strlen(s) : 0, s == NULL);
}

static void put_int(llvm_blake3_hasher *h, char tag, long long v) {
  char b[32];
  snprintf(b, sizeof b, "%lld", v);
  put_str(h, tag, b);
}

void kf_cache_to_hex(const uint8_t b[32], char hex[65]) {
  static const char d[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    hex[2 * i] = d[b[i] >> 4];
    hex[2 * i + 1] = d[b[i] & 15];
  }
  hex[64] = 0;
}

void kf_cache_key_fields_init(kf_cache_key_fields *f) {
  memset(f, 0, sizeof *f);
  f->codegen = KF_CACHE_CODEGEN_VERSION;
}

kf_status kf_cache_key_make(const kf_cache_key_fields *f, kf_cache_key *out, kf_diag *diag) {
  const char *names[] = {"canonical", "precision", "arch", "toolkit"};
  const char *vals[] = {f->canonical, f->precision, f->arch, f->toolkit};
  for (int i = 0; i < 4; i++)
    if (!vals[i] || !vals[i][0]) {
      kf_diag_error(diag, "cache key: field '%s' is missing", names[i]);
      return KF_ERR_ARG;
    }
  if (!f->driver) {
    kf_diag_error(diag, "cache key: field 'driver' is missing (\"\" when no driver version matters)");
    return KF_ERR_ARG;
  }
  if (f->codegen < 1) {
    kf_diag_error(diag, "cache key: codegen version %d (expected >= 1)", f->codegen);
    return KF_ERR_ARG;
  }
  llvm_blake3_hasher h;
  llvm_blake3_hasher_init(&h);
  put_str(&h, 'V', "kfuse-cache-key-v1");
  put_str(&h, 'G', f->canonical);
  put_str(&h, 'P', f->precision);
  put_str(&h, 'A', f->arch);
  put_str(&h, 'T', f->toolkit);
  put_str(&h, 'D', f->driver);
  put_int(&h, 'C', f->codegen);
  llvm_blake3_hasher_finalize(&h, out->bytes, sizeof out->bytes);
  kf_cache_to_hex(out->bytes, out->hex);
  return KF_OK;
}

void kf_cache_payload_hash(const kf_cache_entry *e, char hex[65]) {
  llvm_blake3_hasher h;
  llvm_blake3_hasher_init(&h);
  put_str(&h, 'V', "kfuse-cache-payload-v1");
  put_str(&h, 'K', e->key);
  put_str(&h, 'G', e->canonical);
  put_str(&h, 'P', e->precision);
  put_str(&h, 'A', e->arch);
  put_str(&h, 'T', e->toolkit);
  put_str(&h, 'D', e->driver);
  put_int(&h, 'C', e->codegen);
  put_str(&h, 'J', e->unit_json);
  put_str(&h, 'S', e->unit_cu);
  put_field(&h, 'B', e->cubin, e->cubin_bytes, e->cubin == NULL);
  put_str(&h, 'R', e->verdict);
  put_str(&h, 'E', e->evidence);
  put_int(&h, 'W', e->reward);
  char ms[40];
  kf_cache_format_ms(e->ms, ms);
  put_str(&h, 'M', ms);
  put_str(&h, 'U', e->gpu);
  put_str(&h, 'O', e->policy);
  put_str(&h, 'N', e->endpoint);
  uint8_t b[32];
  llvm_blake3_hasher_finalize(&h, b, sizeof b);
  kf_cache_to_hex(b, hex);
}

int64_t kf_cache_payload_bytes(const kf_cache_entry *e) {
  int64_t n = (int64_t)e->cubin_bytes;
  const char *s[] = {e->unit_json, e->unit_cu, e->verdict, e->evidence};
  for (int i = 0; i < 4; i++)
    if (s[i]) n += (int64_t)strlen(s[i]);
  return n;
}

static void drop(void *user, kf_diag_level level, const char *msg) {
  (void)user;
  (void)level;
  (void)msg;
}

bool kf_cache_entry_corrupt(const kf_cache_entry *e, char *why, size_t n) {
  char hex[65];
  kf_cache_payload_hash(e, hex);
  if (strcmp(hex, e->payload_hash) != 0) {
    snprintf(why, n, "payload hash %.16s does not match the stored %.16s (truncated or altered)", hex,
             e->payload_hash);
    return true;
  }
  kf_cache_key_fields f = {e->canonical, e->precision, e->arch, e->toolkit, e->driver, e->codegen};
  kf_cache_key k;
  kf_diag quiet;
  kf_diag_init(&quiet, drop, NULL);
  if (!e->canonical || !e->precision || !e->arch || !e->toolkit || !e->driver) {
    snprintf(why, n, "a key field is missing");
    return true;
  }
  /* fields are present, so key_make cannot fail except on codegen */
  if (e->codegen < 1 || kf_cache_key_make(&f, &k, &quiet) != KF_OK) {
    snprintf(why, n, "codegen version %d is invalid", e->codegen);
    return true;
  }
  if (strcmp(k.hex, e->key) != 0) {
    snprintf(why, n, "its key fields hash to %.16s, not to its key", k.hex);
    return true;
  }
  if (e->reward < 1 || !e->unit_json || !e->verdict) {
    snprintf(why, n, "not a verified unit (reward %d)", e->reward);
    return true;
  }
  return false;
}

void kf_cache_entry_destroy(kf_cache_entry *e) {
  if (!e) return;
  char *s[] = {e->canonical, e->precision, e->arch, e->toolkit, e->driver, e->unit_json,
               e->unit_cu, e->verdict, e->evidence, e->gpu, e->policy, e->endpoint};
  for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) free(s[i]);
  free(e->cubin);
  free(e);
}

void kf_cache_endpoint_name(const char *url, char *out, size_t n) { kf_url_shown(url, out, n); }

kf_status kf_cache_dir_resolve(const char *dir_flag, char *out, size_t n, kf_diag *diag) {
  const char *env;
  int k = -1;
  if (dir_flag && dir_flag[0]) {
    k = snprintf(out, n, "%s", dir_flag);
  } else if ((env = secure_getenv("KFUSE_CACHE_DIR")) && env[0]) {
    k = snprintf(out, n, "%s", env);
  } else if ((env = secure_getenv("XDG_CACHE_HOME")) && env[0] == '/') {
    k = snprintf(out, n, "%s/kfuse", env);
  } else if ((env = secure_getenv("HOME")) && env[0]) {
    k = snprintf(out, n, "%s/.cache/kfuse", env);
  } else {
    kf_diag_error(diag, "no cache directory: give --cache DIR or set KFUSE_CACHE_DIR (HOME is not set)");
    return KF_ERR_ARG;
  }
  if (k < 0 || (size_t)k >= n) {
    kf_diag_error(diag, "cache directory path is too long");
    return KF_ERR_ARG;
  }
  return KF_OK;
}

int64_t kf_cache_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}
