/* kfuse/cache.h — the kernel cache: verified kernel units kept by key, so
 * kfuse never searches for the same kernel twice (docs/CACHE.md).
 *
 * A key is the BLAKE3 of everything that decides which code a group gets:
 * the group's canonical form, the precision policy, the target arch, the
 * CUDA toolkit / NVRTC version and the driver version class, and the kfuse
 * codegen version (KF_CACHE_CODEGEN_VERSION). Entries made under another
 * arch, toolkit or codegen therefore never match; each entry also keeps
 * those fields so `kfuse cache verify` can recompute its key.
 *
 * An entry holds the unit as text (unit.json, unit.cu) plus its cubin, the
 * judge's verdict (kfuse-verdict-v1) and evidence, the median time with the
 * GPU's name, the policy that made it and the reward. The local store is a
 * directory holding one SQLite database in WAL mode; entries, payloads
 * included, are rows written in one transaction each, so concurrent
 * processes and processes killed mid-write never see half an entry. Every
 * entry carries a BLAKE3 of its immutable fields, checked on every read: a
 * corrupt entry is reported as a warning naming it, removed and treated as
 * a miss.
 *
 * Beside the local store, an HTTP remote (docs/CACHE.md "The remote"):
 * entries in their wire form (kf_cache_entry_encode) under URL/ab/KEY,
 * read with GET, probed with HEAD and written with PUT, the convention
 * ccache, sccache and bazel-remote share. A remote that fails is a warning
 * and a miss, never an error, and is not asked again in the process; the
 * tiered helpers kf_cache_fetch and kf_cache_store are what the compiler
 * calls (local first, remote hits written through).
 *
 * This module calls only support/ (status, diagnostics, the libcurl
 * loader), SQLite and the BLAKE3 of the LLVM C API; it knows units only as
 * text and bytes, so it sits beside agent/ above the IR core. */
#ifndef KFUSE_CACHE_H
#define KFUSE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kfuse/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever generated code can change for the same key fields: a
 * template under agent/templates, a builder in agent/builtin*.c, the unit
 * format or the NVRTC options. Old entries then stop matching (and age out
 * through gc). */
#define KF_CACHE_CODEGEN_VERSION 2

/* The store's on-disk format (the database schema). */
#define KF_CACHE_FORMAT "kfuse-cache-v1"
/* The format of `kfuse cache export` files. */
#define KF_CACHE_EXPORT_FORMAT "kfuse-cache-export-v1"
/* The first line of an entry's wire form (what a remote stores). */
#define KF_CACHE_WIRE_FORMAT "kfuse-cache-entry-v1"

/* What a key is made of. All strings required and non-empty except driver
 * (may be ""), all borrowed. */
typedef struct kf_cache_key_fields {
  const char *canonical; /* kf_group.canonical */
  const char *precision; /* kf_precision_name(): "default", "tf32", ... */
  const char *arch;      /* "sm_90", "sm_90a" */
  const char *toolkit;   /* CUDA toolkit + NVRTC version: "cuda-13.0/nvrtc-13.0" */
  const char *driver;    /* the driver version class that changes code
                            generation ("" when none does) */
  int codegen;           /* KF_CACHE_CODEGEN_VERSION (set by _init) */
} kf_cache_key_fields;

/* All NULL, codegen = KF_CACHE_CODEGEN_VERSION. */
KF_API void kf_cache_key_fields_init(kf_cache_key_fields *f);

typedef struct kf_cache_key {
  uint8_t bytes[32];
  char hex[65];
} kf_cache_key;

/* The key of f: BLAKE3 over a tagged, length-prefixed encoding of every
 * field (so no two field lists encode alike). KF_ERR_ARG naming the field
 * when one is missing or empty. */
KF_API kf_status kf_cache_key_make(const kf_cache_key_fields *f, kf_cache_key *out, kf_diag *diag);

/* One entry. Strings are NUL-terminated and owned by the entry when it
 * came from the cache (kf_cache_entry_destroy frees them); for kf_cache_put
 * they are borrowed. */
typedef struct kf_cache_entry {
  char key[65];          /* lowercase hex of kf_cache_key */
  /* the key's fields, kept for verify and ls */
  char *canonical, *precision, *arch, *toolkit, *driver;
  int codegen;
  /* the unit */
  char *unit_json;       /* kf_unit_to_json's text (source file "unit.cu") */
  char *unit_cu;         /* the source, or NULL for library steps only */
  void *cubin;           /* NVRTC's cubin for arch, or NULL */
  size_t cubin_bytes;
  /* the judge's evidence */
  char *verdict;         /* the verdict JSON (kfuse-verdict-v1) */
  char *evidence;        /* anything else the judge kept (JSON), or NULL */
  int reward;            /* the verdict's reward: 1, 2 or 3 */
  double ms;             /* the verdict's median time of the unit */
  char *gpu;             /* the GPU it was timed on (the verdict's device) */
  /* who made it: "builtin:<rule or variant label>" or "llm:<model>"; the
   * endpoint's name for LLM units (kf_cache_endpoint_name), else "" */
  char *policy;
  char *endpoint;
  /* set by the cache */
  int64_t created_ms, last_used_ms; /* Unix time, milliseconds */
  int64_t hits;
  int64_t bytes;         /* payload bytes (unit, cubin, verdict, evidence) */
  char payload_hash[65]; /* BLAKE3 of the immutable fields (hex) */
} kf_cache_entry;

/* Frees every field and e. Accepts NULL. */
KF_API void kf_cache_entry_destroy(kf_cache_entry *e);

/* An endpoint URL reduced to what may be stored: scheme, host, port and
 * path, without user:password@ and without ?query or #fragment (where
 * keys hide). Into out[n]. */
KF_API void kf_cache_endpoint_name(const char *url, char *out, size_t n);

/* The store's directory: dir_flag when given (--cache), else
 * $KFUSE_CACHE_DIR, else $XDG_CACHE_HOME/kfuse (an absolute
 * XDG_CACHE_HOME), else $HOME/.cache/kfuse. Into out[n]; KF_ERR_ARG when
 * none applies or it does not fit. */
KF_API kf_status kf_cache_dir_resolve(const char *dir_flag, char *out, size_t n, kf_diag *diag);

typedef struct kf_cache kf_cache;

typedef struct kf_cache_options {
  int busy_timeout_ms;   /* how long to wait for another writer (30000) */
  int64_t max_bytes;     /* > 0: puts evict least-recently-used entries
                            beyond this many payload bytes (0: no limit) */
} kf_cache_options;

KF_API void kf_cache_options_init(kf_cache_options *o);

/* Open (creating when needed) the store in dir: dir/index.sqlite in WAL
 * mode, dir/CACHEDIR.TAG. KF_ERR_VERSION when it holds another format; an
 * error naming the file and SQLite's message when it cannot be opened. o
 * may be NULL (defaults). */
KF_API kf_status kf_cache_open(const char *dir, const kf_cache_options *o, kf_cache **out, kf_diag *diag);
/* Close. Accepts NULL. */
KF_API void kf_cache_close(kf_cache *c);
/* The directory the cache was opened on (borrowed). */
KF_API const char *kf_cache_dir(const kf_cache *c);

typedef enum kf_cache_put_result {
  KF_CACHE_PUT_NEW = 0,      /* no entry for the key: stored */
  KF_CACHE_PUT_REPLACED = 1, /* better than the entry there (or that one was
                                corrupt): replaced */
  KF_CACHE_PUT_KEPT = 2,     /* the entry there is as good or better: kept */
} kf_cache_put_result;

/* Store e under e->key, which must be the key of e's key fields. The
 * replace rule: a higher reward wins; at equal reward, a strictly smaller
 * ms on the same GPU name wins; anything else (a tie) keeps the older
 * entry. Only verified units are stored: reward >= 1, a verdict and
 * unit_json are required (KF_ERR_ARG otherwise). created_ms/last_used_ms
 * are taken from e when non-zero (import), else now. One IMMEDIATE
 * transaction; res may be NULL. */
KF_API kf_status kf_cache_put(kf_cache *c, const kf_cache_entry *e, kf_cache_put_result *res, kf_diag *diag);

/* The entry for key_hex into *out (the caller destroys it), or *out = NULL
 * on a miss. The payload hash and the key are checked: a corrupt or
 * truncated entry is a warning naming it, is removed, and is a miss (KF_OK).
 * A hit updates the entry's last use and hit count; the store counts hits
 * and misses. That bookkeeping is written in batches (64 hits), before
 * stats, list, verify, gc and export read it, and at close: a compile's
 * lookups do not sync the database once each. */
KF_API kf_status kf_cache_get(kf_cache *c, const char *key_hex, kf_cache_entry **out, kf_diag *diag);

/* Remove key_hex's entry, if any (a unit that failed the judge again:
 * kfuse compile --reverify). One IMMEDIATE transaction. */
KF_API kf_status kf_cache_remove(kf_cache *c, const char *key_hex, kf_diag *diag);

typedef struct kf_cache_stats {
  int64_t entries;
  int64_t bytes;       /* payload bytes of all entries */
  int64_t file_bytes;  /* the database and its WAL on disk */
  int64_t hits, misses; /* kf_cache_get's, since the store was created */
} kf_cache_stats;

KF_API kf_status kf_cache_get_stats(kf_cache *c, kf_cache_stats *out, kf_diag *diag);

/* Calls fn for every entry, ordered by key, with the metadata only
 * (unit_json, unit_cu, cubin, verdict and evidence NULL; the entry is
 * borrowed for the call). fn returns non-zero to stop. One read
 * transaction: a consistent snapshot. */
typedef int (*kf_cache_list_fn)(void *user, const kf_cache_entry *e);
KF_API kf_status kf_cache_list(kf_cache *c, kf_cache_list_fn fn, void *user, kf_diag *diag);

/* Check every entry (payload hash, key recomputed from its fields) and
 * SQLite's own quick_check; each corrupt entry is a warning naming it and
 * is removed. Counts into *n_ok, *n_corrupt (may be NULL). KF_OK even when
 * some were corrupt (the caller decides); an error when the database
 * itself cannot be read. */
KF_API kf_status kf_cache_verify(kf_cache *c, int64_t *n_ok, int64_t *n_corrupt, kf_diag *diag);

/* Evict least-recently-used entries until the payload bytes are at most
 * max_bytes, then give the freed pages back to the file system. Counts
 * into *n_evicted, *bytes_freed (may be NULL). */
KF_API kf_status kf_cache_gc(kf_cache *c, int64_t max_bytes, int64_t *n_evicted, int64_t *bytes_freed,
                             kf_diag *diag);

/* Every entry into one SQLite file (format KF_CACHE_EXPORT_FORMAT),
 * written beside path, synced and renamed into place; from one snapshot
 * of the store. *n entries written (may be NULL). */
KF_API kf_status kf_cache_export(kf_cache *c, const char *path, int64_t *n, kf_diag *diag);

typedef struct kf_cache_import_counts {
  int64_t added, replaced, kept, corrupt;
} kf_cache_import_counts;

/* Every entry of an export file put into the store by kf_cache_put's
 * replace rule, each checked first (a corrupt one is a warning and is
 * skipped). counts may be NULL. */
KF_API kf_status kf_cache_import(kf_cache *c, const char *path, kf_cache_import_counts *counts,
                                 kf_diag *diag);

/* ---- the wire form of one entry (cache/wire.c) ------------------------------ */

/* e as bytes, appended to out: the line "kfuse-cache-entry-v1\n", then
 * every immutable field (the key, its fields, the unit, cubin, verdict,
 * evidence, reward, ms, GPU, policy, endpoint, payload hash, created_ms)
 * as a tag byte, an 8-byte little-endian length and the bytes, then a
 * BLAKE3 of all that. e->payload_hash is written as it is (the decoder
 * checks it). KF_ERR_ARG when a required field is missing or the key or
 * payload hash is not 64 hex digits; KF_ERR_NOMEM when out failed. */
KF_API kf_status kf_cache_entry_encode(const kf_cache_entry *e, kf_strbuf *out, kf_diag *diag);

/* The entry in buf[n] into *out (the caller destroys it), or an error and
 * *out = NULL: KF_ERR_VERSION for another format version, KF_ERR_FORMAT
 * for anything else off (truncated, a length past the end, an unknown or
 * repeated field, a missing one, a bad number, a checksum, payload hash or
 * key that does not match the content). Never reads past buf[n - 1].
 * last_used_ms = created_ms, hits = 0, bytes recomputed. */
KF_API kf_status kf_cache_entry_decode(const void *buf, size_t n, kf_cache_entry **out, kf_diag *diag);

/* ---- the HTTP remote (cache/remote.c) --------------------------------------- */

typedef struct kf_cache_remote kf_cache_remote;

typedef struct kf_cache_remote_options {
  const char *url;          /* http:// or https:// base URL, no user:password@,
                               no ?query (borrowed; open copies it) */
  bool read_only;           /* never PUT (untrusted consumers: pull requests) */
  double timeout_s;         /* one operation, its retries included (10) */
  double connect_timeout_s; /* one connection attempt (5) */
  int retries;              /* further attempts after a transient failure (2) */
  double backoff_s;         /* the first wait before a retry, doubling,
                               jittered (0.25); a Retry-After in seconds
                               replaces it */
  int64_t max_body_bytes;   /* the largest entry sent or accepted (256 MiB) */
} kf_cache_remote_options;

/* The defaults above, url NULL. */
KF_API void kf_cache_remote_options_init(kf_cache_remote_options *o);

/* A remote at o->url. Nothing is sent until the first request. Credentials
 * come from the environment only, read at each request and never stored,
 * logged or written: KFUSE_CACHE_REMOTE_BEARER (Authorization: Bearer), or
 * KFUSE_CACHE_REMOTE_USER and KFUSE_CACHE_REMOTE_PASSWORD (basic).
 * KF_ERR_ARG for a URL that is not http(s), holds credentials or a query,
 * or a user without a password; KF_ERR_UNSUPPORTED when libcurl cannot be
 * loaded. One remote serves several threads (requests are serialised). */
KF_API kf_status kf_cache_remote_open(const kf_cache_remote_options *o, kf_cache_remote **out, kf_diag *diag);
/* Close. Accepts NULL. */
KF_API void kf_cache_remote_close(kf_cache_remote *r);
/* The base URL as diagnostics show it (borrowed). */
KF_API const char *kf_cache_remote_url(const kf_cache_remote *r);

/* GET URL/<key_hex[0..2]>/<key_hex> into *out (the caller destroys it), or
 * *out = NULL on a miss. A 404 is a miss. A corrupt body (truncated, hash
 * or key off, another key's entry, over max_body_bytes) is a warning
 * naming the key and a miss. A failure after the retries (5xx, 408, 429,
 * timeouts and connection failures are retried; other statuses are not)
 * is a warning and a miss, and marks the remote down: every later call in
 * the process returns at once (a miss, no further warning). KF_OK in all
 * these cases; KF_ERR_ARG for a key that is not 64 lowercase hex digits. */
KF_API kf_status kf_cache_remote_get(kf_cache_remote *r, const char *key_hex, kf_cache_entry **out,
                                     kf_diag *diag);
/* HEAD of the same URL: *present true on 2xx. Failures as for get
 * (*present false). */
KF_API kf_status kf_cache_remote_head(kf_cache_remote *r, const char *key_hex, bool *present, kf_diag *diag);
/* PUT e's wire form at its key's URL (the remote keeps the last put).
 * Nothing is sent in read-only mode or once the remote is down. e may
 * come from the store (its payload hash is checked) or be new, as for
 * kf_cache_put (payload hash, created_ms and endpoint "" filled in). A
 * failure is a warning (KF_OK); a 401, 403 or 405 also stops further puts
 * in the process (gets go on); a transient failure after the retries
 * marks the remote down. KF_ERR_ARG when e is not a verified entry. */
KF_API kf_status kf_cache_remote_put(kf_cache_remote *r, const kf_cache_entry *e, kf_diag *diag);

typedef struct kf_cache_remote_stats {
  int64_t requests;       /* HTTP requests sent, retries included */
  int64_t retries;        /* of them, retries */
  int64_t hits, misses;   /* gets: entries returned; misses (404, corrupt,
                             failures, down) */
  int64_t corrupt;        /* of the misses, corrupt bodies */
  int64_t puts, put_failures; /* puts that stored an entry; that failed */
  int64_t skipped;        /* puts not sent: read-only, down or puts stopped */
  bool down;              /* failed after retries: no request is sent any more */
  bool puts_stopped;      /* refused a put (401, 403, 405): no put is sent any more */
} kf_cache_remote_stats;

KF_API void kf_cache_remote_get_stats(kf_cache_remote *r, kf_cache_remote_stats *out);

typedef struct kf_cache_push_counts {
  int64_t entries;  /* local entries considered */
  int64_t pushed;   /* the remote lacked them: PUT */
  int64_t present;  /* the remote had them (HEAD) */
  int64_t failed;   /* not pushed: a failed PUT, a corrupt local entry, the
                       remote down or refusing puts */
} kf_cache_push_counts;

/* Every entry of local that the remote lacks (HEAD, then PUT), from one
 * listing of the store; reading them does not count as a use. Remote
 * failures are warnings counted in counts->failed (KF_OK); errors only
 * for the local store or read-only mode (KF_ERR_ARG). */
KF_API kf_status kf_cache_remote_push(kf_cache_remote *r, kf_cache *local, kf_cache_push_counts *counts,
                                      kf_diag *diag);

/* ---- the two tiers together (cache/tiered.c) -------------------------------- */

typedef enum kf_cache_source {
  KF_CACHE_MISS = 0,
  KF_CACHE_LOCAL = 1,
  KF_CACHE_REMOTE = 2,
} kf_cache_source;

/* The entry for key_hex: from local (may be NULL) first; on a local miss
 * from remote (may be NULL), and a remote hit is written through into
 * local (kf_cache_put; a failure to write is a warning, the hit stands).
 * *out NULL on a miss; *source (may be NULL) the kf_cache_source it came
 * from. The remote never makes this fail (see kf_cache_remote_get); local
 * errors are kf_cache_get's. */
KF_API kf_status kf_cache_fetch(kf_cache *local, kf_cache_remote *remote, const char *key_hex,
                                kf_cache_entry **out, int *source, kf_diag *diag);

/* Put e locally (local may be NULL; kf_cache_put's rules and errors), and
 * to the remote (may be NULL) unless it is read-only or the local store
 * kept an entry at least as good (then the remote has, or had, that one).
 * Remote failures are warnings. *res (may be NULL): the local put's result
 * (KF_CACHE_PUT_NEW without a local store). */
KF_API kf_status kf_cache_store(kf_cache *local, kf_cache_remote *remote, const kf_cache_entry *e,
                                kf_cache_put_result *res, kf_diag *diag);

#ifdef __cplusplus
}
#endif
#endif
