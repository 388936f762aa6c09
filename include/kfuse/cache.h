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
 * This module calls only support/ (status, diagnostics), SQLite and the
 * BLAKE3 of the LLVM C API; it knows units only as text and bytes, so it
 * sits beside agent/ above the IR core. */
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
#define KF_CACHE_CODEGEN_VERSION 1

/* The store's on-disk format (the database schema). */
#define KF_CACHE_FORMAT "kfuse-cache-v1"
/* The format of `kfuse cache export` files. */
#define KF_CACHE_EXPORT_FORMAT "kfuse-cache-export-v1"

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

#ifdef __cplusplus
}
#endif
#endif
