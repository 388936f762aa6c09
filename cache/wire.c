/* cache/wire.c — one entry as bytes: what the HTTP remote stores under
 * URL/ab/KEY (docs/CACHE.md "The wire form").
 *
 *   "kfuse-cache-entry-v1\n"
 *   fields, each: a tag byte, its length as 8 little-endian bytes, its bytes
 *   the trailer: tag 'Z', length 32, the BLAKE3 of every byte before it
 *
 * The field encoding is the one the key and the payload hash hash over
 * (kf_cache_field_header), with the same tags. Numbers are decimal text,
 * the median time as the payload hash spells it, so it reads back as the
 * same double. Absent optional fields (unit_cu, cubin, evidence) are left
 * out; an empty cubin is a field of length 0.
 *
 * The bytes come from a server we do not control, so the decoder trusts
 * nothing: every length is checked against what is left before it is
 * used, each field may appear once, unknown tags are refused (a new field
 * is a new format version), strings may not hold NUL, numbers must be
 * whole decimal text in range. The trailer catches a flipped bit anywhere,
 * created_ms included (which the payload hash does not cover); then the
 * entry must pass the store's own check (kf_cache_entry_corrupt: payload
 * hash, key recomputed from the key fields, a verified unit). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/blake3.h>

#include "cache_int.h"

enum {
  F_KEY, F_HASH, F_CANONICAL, F_PRECISION, F_ARCH, F_TOOLKIT, F_DRIVER, F_CODEGEN, F_UNIT_JSON, F_UNIT_CU,
  F_CUBIN, F_VERDICT, F_EVIDENCE, F_REWARD, F_MS, F_GPU, F_POLICY, F_ENDPOINT, F_CREATED, N_FIELDS
};

/* In the order the encoder writes them; the decoder takes any order. */
static const struct {
  char tag;
  const char *name;
  bool required;
} fields[N_FIELDS] = {
    [F_KEY] = {'K', "key", true},
    [F_HASH] = {'H', "payload_hash", true},
    [F_CANONICAL] = {'G', "canonical", true},
    [F_PRECISION] = {'P', "precision", true},
    [F_ARCH] = {'A', "arch", true},
    [F_TOOLKIT] = {'T', "toolkit", true},
    [F_DRIVER] = {'D', "driver", true},
    [F_CODEGEN] = {'C', "codegen", true},
    [F_UNIT_JSON] = {'J', "unit_json", true},
    [F_UNIT_CU] = {'S', "unit_cu", false},
    [F_CUBIN] = {'B', "cubin", false},
    [F_VERDICT] = {'R', "verdict", true},
    [F_EVIDENCE] = {'E', "evidence", false},
    [F_REWARD] = {'W', "reward", true},
    [F_MS] = {'M', "ms", true},
    [F_GPU] = {'U', "gpu", true},
    [F_POLICY] = {'O', "policy", true},
    [F_ENDPOINT] = {'N', "endpoint", true},
    [F_CREATED] = {'c', "created_ms", true},
};

#define MAGIC KF_CACHE_WIRE_FORMAT "\n"
#define MAGIC_LEN (sizeof MAGIC - 1)
#define TRAILER_TAG 'Z'
#define TRAILER_LEN (9 + 32)

/* ---- encode ------------------------------------------------------------- */

static void put_bytes(kf_strbuf *out, char tag, const void *p, size_t n) {
  uint8_t hdr[9];
  kf_cache_field_header(hdr, tag, (uint64_t)n);
  kf_strbuf_append(out, (const char *)hdr, sizeof hdr);
  if (n) kf_strbuf_append(out, p, n);
}

static void put_str(kf_strbuf *out, int f, const char *s) {
  if (s) put_bytes(out, fields[f].tag, s, strlen(s));
}

static void put_int(kf_strbuf *out, int f, long long v) {
  char b[32];
  int n = snprintf(b, sizeof b, "%lld", v);
  put_bytes(out, fields[f].tag, b, (size_t)n);
}

kf_status kf_cache_entry_encode(const kf_cache_entry *e, kf_strbuf *out, kf_diag *diag) {
  if (!kf_cache_key_hex_valid(e->key) || !kf_cache_key_hex_valid(e->payload_hash)) {
    kf_diag_error(diag, "cache entry encode: the key and the payload hash must be 64 lowercase hex digits "
                  "(key '%.70s')", e->key);
    return KF_ERR_ARG;
  }
  const char *req[] = {e->canonical, e->precision, e->arch, e->toolkit, e->driver,
                       e->unit_json, e->verdict,   e->gpu,  e->policy};
  for (size_t i = 0; i < sizeof req / sizeof req[0]; i++)
    if (!req[i]) {
      kf_diag_error(diag, "cache entry %.16s: encode: a required field is missing", e->key);
      return KF_ERR_ARG;
    }
  size_t start = out->len;
  kf_strbuf_append(out, MAGIC, MAGIC_LEN);
  put_str(out, F_KEY, e->key);
  put_str(out, F_HASH, e->payload_hash);
  put_str(out, F_CANONICAL, e->canonical);
  put_str(out, F_PRECISION, e->precision);
  put_str(out, F_ARCH, e->arch);
  put_str(out, F_TOOLKIT, e->toolkit);
  put_str(out, F_DRIVER, e->driver);
  put_int(out, F_CODEGEN, e->codegen);
  put_str(out, F_UNIT_JSON, e->unit_json);
  put_str(out, F_UNIT_CU, e->unit_cu);
  if (e->cubin) put_bytes(out, fields[F_CUBIN].tag, e->cubin, e->cubin_bytes);
  put_str(out, F_VERDICT, e->verdict);
  put_str(out, F_EVIDENCE, e->evidence);
  put_int(out, F_REWARD, e->reward);
  char ms[40];
  kf_cache_format_ms(e->ms, ms);
  put_str(out, F_MS, ms);
  put_str(out, F_GPU, e->gpu);
  put_str(out, F_POLICY, e->policy);
  put_str(out, F_ENDPOINT, e->endpoint ? e->endpoint : "");
  put_int(out, F_CREATED, (long long)e->created_ms);
  if (out->failed) return KF_ERR_NOMEM;
  uint8_t sum[32];
  llvm_blake3_hasher h;
  llvm_blake3_hasher_init(&h);
  llvm_blake3_hasher_update(&h, out->data + start, out->len - start);
  llvm_blake3_hasher_finalize(&h, sum, sizeof sum);
  put_bytes(out, TRAILER_TAG, sum, sizeof sum);
  return out->failed ? KF_ERR_NOMEM : KF_OK;
}

/* ---- decode ------------------------------------------------------------- */

static uint64_t le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/* A whole decimal integer in [lo, hi] from p[n] (no sign but '-', no
 * spaces, no leading zeros beyond "0"), or false. */
static bool parse_int(const uint8_t *p, size_t n, long long lo, long long hi, long long *out) {
  char b[32];
  if (n == 0 || n >= sizeof b) return false;
  memcpy(b, p, n);
  b[n] = 0;
  const char *digits = b[0] == '-' ? b + 1 : b;
  if (!digits[0] || (digits[0] == '0' && (digits[1] || digits != b))) return false; /* "01", "-0" */
  for (const char *q = digits; *q; q++)
    if (*q < '0' || *q > '9') return false;
  errno = 0;
  long long v = strtoll(b, NULL, 10);
  if (errno || v < lo || v > hi) return false;
  *out = v;
  return true;
}

/* A median time: finite, >= 0, and spelt exactly as the encoder spells it
 * (so one double has one encoding and the payload hash agrees). */
static bool parse_ms(const uint8_t *p, size_t n, double *out) {
  char b[40], again[40];
  if (n == 0 || n >= sizeof b || memchr(p, 0, n)) return false;
  memcpy(b, p, n);
  b[n] = 0;
  char *end = NULL;
  errno = 0;
  double v = strtod(b, &end);
  if (errno || *end || !isfinite(v) || v < 0) return false;
  kf_cache_format_ms(v, again);
  if (strcmp(again, b) != 0) return false;
  *out = v;
  return true;
}

static char *dup_field(const uint8_t *p, size_t n) {
  char *s = malloc(n + 1);
  if (!s) return NULL;
  if (n) memcpy(s, p, n);
  s[n] = 0;
  return s;
}

kf_status kf_cache_entry_decode(const void *buf, size_t n, kf_cache_entry **out, kf_diag *diag) {
  *out = NULL;
  const uint8_t *b = buf;
  size_t off[N_FIELDS] = {0};
  uint64_t len[N_FIELDS] = {0};
  bool seen[N_FIELDS] = {false};
  kf_cache_entry *e = NULL;
  kf_status s = KF_ERR_FORMAT;

  static const char family[] = "kfuse-cache-entry-v";
  if (n < MAGIC_LEN || memcmp(b, MAGIC, MAGIC_LEN) != 0) {
    size_t k = n < sizeof family - 1 ? n : sizeof family - 1;
    if (n >= sizeof family - 1 && memcmp(b, family, k) == 0) {
      /* our format, another version: name it */
      size_t v = sizeof family - 1, w = v;
      while (w < n && w < v + 16 && b[w] >= '0' && b[w] <= '9') w++;
      kf_diag_error(diag, "cache entry of format version '%.*s': this kfuse reads " KF_CACHE_WIRE_FORMAT,
                    (int)(w - v), (const char *)b + v);
      return KF_ERR_VERSION;
    }
    kf_diag_error(diag, "not a kfuse cache entry (%zu bytes, no '" KF_CACHE_WIRE_FORMAT "' line)", n);
    return KF_ERR_FORMAT;
  }

  size_t p = MAGIC_LEN;
  for (;;) {
    if (n - p < 9) {
      kf_diag_error(diag, "cache entry truncated at byte %zu of %zu: a field header needs 9 bytes", p, n);
      return KF_ERR_FORMAT;
    }
    char tag = (char)b[p];
    uint64_t l = le64(b + p + 1);
    size_t at = p;
    p += 9;
    if (tag == TRAILER_TAG) {
      if (l != 32 || n - p != 32) {
        kf_diag_error(diag, "cache entry: the checksum at byte %zu is not the last 32 bytes (truncated or "
                      "altered)", at);
        return KF_ERR_FORMAT;
      }
      uint8_t sum[32];
      llvm_blake3_hasher h;
      llvm_blake3_hasher_init(&h);
      llvm_blake3_hasher_update(&h, b, at);
      llvm_blake3_hasher_finalize(&h, sum, sizeof sum);
      if (memcmp(sum, b + p, 32) != 0) {
        kf_diag_error(diag, "cache entry: checksum mismatch (altered in transit or in storage)");
        return KF_ERR_FORMAT;
      }
      break;
    }
    int f = -1;
    for (int i = 0; i < N_FIELDS; i++)
      if (fields[i].tag == tag) f = i;
    if (f < 0) {
      kf_diag_error(diag, "cache entry: unknown field tag 0x%02x at byte %zu", (unsigned)(uint8_t)tag, at);
      return KF_ERR_FORMAT;
    }
    if (l > n - p) {
      kf_diag_error(diag, "cache entry: field '%s' at byte %zu claims %" PRIu64 " bytes, %zu are left "
                    "(truncated or altered)", fields[f].name, at, l, n - p);
      return KF_ERR_FORMAT;
    }
    if (seen[f]) {
      kf_diag_error(diag, "cache entry: field '%s' appears twice (byte %zu)", fields[f].name, at);
      return KF_ERR_FORMAT;
    }
    seen[f] = true;
    off[f] = p;
    len[f] = l;
    p += (size_t)l;
  }

  for (int f = 0; f < N_FIELDS; f++) {
    if (fields[f].required && !seen[f]) {
      kf_diag_error(diag, "cache entry: field '%s' is missing", fields[f].name);
      return KF_ERR_FORMAT;
    }
    if (seen[f] && f != F_CUBIN && memchr(b + off[f], 0, (size_t)len[f])) {
      kf_diag_error(diag, "cache entry: field '%s' holds a NUL byte", fields[f].name);
      return KF_ERR_FORMAT;
    }
  }
  if (len[F_KEY] != 64 || len[F_HASH] != 64) {
    kf_diag_error(diag, "cache entry: the key and the payload hash must be 64 hex digits");
    return KF_ERR_FORMAT;
  }

  e = calloc(1, sizeof *e);
  if (!e) return KF_ERR_NOMEM;
  memcpy(e->key, b + off[F_KEY], 64);
  memcpy(e->payload_hash, b + off[F_HASH], 64);
  if (!kf_cache_key_hex_valid(e->key) || !kf_cache_key_hex_valid(e->payload_hash)) {
    kf_diag_error(diag, "cache entry: the key or the payload hash is not lowercase hex");
    goto fail;
  }
  long long codegen, reward, created;
  if (!parse_int(b + off[F_CODEGEN], (size_t)len[F_CODEGEN], 1, INT_MAX, &codegen) ||
      !parse_int(b + off[F_REWARD], (size_t)len[F_REWARD], INT_MIN, INT_MAX, &reward) ||
      !parse_int(b + off[F_CREATED], (size_t)len[F_CREATED], 0, INT64_MAX, &created) ||
      !parse_ms(b + off[F_MS], (size_t)len[F_MS], &e->ms)) {
    kf_diag_error(diag, "cache entry %.16s: codegen, reward, created_ms or ms is not a number in range", e->key);
    goto fail;
  }
  e->codegen = (int)codegen;
  e->reward = (int)reward;
  e->created_ms = created;
  e->last_used_ms = created;
  char **strs[] = {[F_CANONICAL] = &e->canonical, [F_PRECISION] = &e->precision, [F_ARCH] = &e->arch,
                   [F_TOOLKIT] = &e->toolkit,     [F_DRIVER] = &e->driver,       [F_UNIT_JSON] = &e->unit_json,
                   [F_UNIT_CU] = &e->unit_cu,     [F_VERDICT] = &e->verdict,     [F_EVIDENCE] = &e->evidence,
                   [F_GPU] = &e->gpu,             [F_POLICY] = &e->policy,       [F_ENDPOINT] = &e->endpoint};
  for (size_t f = 0; f < sizeof strs / sizeof strs[0]; f++) {
    if (!strs[f] || !seen[f]) continue;
    if (!(*strs[f] = dup_field(b + off[f], (size_t)len[f]))) {
      s = KF_ERR_NOMEM;
      goto fail;
    }
  }
  if (seen[F_CUBIN]) {
    e->cubin = malloc(len[F_CUBIN] ? (size_t)len[F_CUBIN] : 1); /* an empty cubin stays non-NULL */
    if (!e->cubin) {
      s = KF_ERR_NOMEM;
      goto fail;
    }
    if (len[F_CUBIN]) memcpy(e->cubin, b + off[F_CUBIN], (size_t)len[F_CUBIN]);
    e->cubin_bytes = (size_t)len[F_CUBIN];
  }
  e->bytes = kf_cache_payload_bytes(e);
  char why[160];
  if (kf_cache_entry_corrupt(e, why, sizeof why)) {
    kf_diag_error(diag, "cache entry %.16s is corrupt: %s", e->key, why);
    goto fail;
  }
  /* what kf_cache_put requires beyond that, so a decoded entry can be put */
  if (!e->gpu[0] || !e->policy[0] || strchr(e->endpoint, '@') || strchr(e->endpoint, '?')) {
    kf_diag_error(diag, "cache entry %.16s: an empty gpu or policy, or an endpoint holding credentials", e->key);
    goto fail;
  }
  *out = e;
  return KF_OK;
fail:
  kf_cache_entry_destroy(e);
  return s;
}
