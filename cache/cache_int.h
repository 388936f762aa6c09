/* cache/cache_int.h — private to cache/: the open store, the SQLite
 * helpers every file shares (each call's result checked, errors naming
 * what was being done, the database and sqlite3_errmsg) and the entry's
 * payload hash. */
#ifndef KFUSE_CACHE_INT_H
#define KFUSE_CACHE_INT_H

#include <sqlite3.h>

#include "kfuse/cache.h"

/* A hit whose bookkeeping (last use, hit count) is not written yet */
typedef struct kf_cache_use {
  char key[65], hash[65];
  int64_t at_ms;
} kf_cache_use;

struct kf_cache {
  sqlite3 *db;
  char *dir;
  char *db_path;
  kf_cache_options opts;
  /* gets' bookkeeping, written in one transaction by kf_cache_flush_uses
   * (a compile's lookups would otherwise sync the WAL once per group) */
  kf_cache_use *uses;
  int n_uses, cap_uses;
  int64_t pending_misses;
};

/* Write the pending hits' last use and hit counts and the hit and miss
 * counters, in one transaction; before anything that reads them (stats,
 * list, gc, export, verify) and at close. */
kf_status kf_cache_flush_uses(kf_cache *c, kf_diag *diag);

/* Columns of the entries table in storage order: metadata first, the
 * large payload columns last, so listing never reads the payload pages.
 * ENTRY_META_COLS is the prefix kf_cache_list reads. */
#define ENTRY_META_COLS                                                          \
  "key, payload_hash, bytes, reward, ms, gpu, policy, endpoint, precision, arch, " \
  "toolkit, driver, codegen, created_ms, last_used_ms, hits, canonical"
#define ENTRY_N_META 17
#define ENTRY_COLS ENTRY_META_COLS ", unit_json, unit_cu, cubin, verdict, evidence"
#define ENTRY_N_COLS 22

/* CREATE TABLE statement of entries in schema (main or an export file). */
extern const char kf_cache_entries_sql[];

/* The SQLite error rc while doing what on c's database (or on file, for
 * another one): reported, and mapped to a kf_status. */
kf_status kf_cache_sql_error(sqlite3 *db, const char *file, int rc, const char *what, kf_diag *diag);
/* sqlite3_exec of sql with the error reported. */
kf_status kf_cache_exec(sqlite3 *db, const char *file, const char *sql, kf_diag *diag);
/* BEGIN IMMEDIATE, retried while another process holds the write lock
 * (beyond the busy handler, which SQLite skips in some lock upgrades). */
kf_status kf_cache_begin_write(sqlite3 *db, const char *file, kf_diag *diag);
/* ROLLBACK when a transaction is open; errors ignored (used on failure). */
void kf_cache_rollback(sqlite3 *db);

/* The header of one field in the tagged, length-prefixed encoding that the
 * key, the payload hash and the wire form share: the tag byte, then len as
 * 8 little-endian bytes. */
void kf_cache_field_header(uint8_t hdr[9], char tag, uint64_t len);
/* A median time as the hash and the wire form spell it ("%.17g": strtod
 * reads back the same double). */
void kf_cache_format_ms(double ms, char out[40]);
/* 32 bytes as 64 lowercase hex digits. */
void kf_cache_to_hex(const uint8_t b[32], char hex[65]);
/* Whether k is 64 lowercase hex digits (a key or a payload hash). */
bool kf_cache_key_hex_valid(const char *k);

/* The BLAKE3 (hex) of e's immutable fields: key, key fields, unit, cubin,
 * verdict, evidence, reward, ms, GPU, policy, endpoint. */
void kf_cache_payload_hash(const kf_cache_entry *e, char hex[65]);
/* Payload bytes of e (unit_json, unit_cu, cubin, verdict, evidence). */
int64_t kf_cache_payload_bytes(const kf_cache_entry *e);
/* Why e is corrupt (its stored hash or key disagrees with its content),
 * into why[n], or false when it is intact. e must have its payload. */
bool kf_cache_entry_corrupt(const kf_cache_entry *e, char *why, size_t n);

/* An entry from the current row of st (ENTRY_COLS, or ENTRY_META_COLS when
 * meta_only): NULL when out of memory. */
kf_cache_entry *kf_cache_row_entry(sqlite3_stmt *st, bool meta_only);
/* Bind e to the ENTRY_N_COLS parameters of an INSERT of ENTRY_COLS. */
int kf_cache_bind_entry(sqlite3_stmt *st, const kf_cache_entry *e);

/* The stored entry for key into *out as it is (NULL when none): neither
 * checked nor counted as a use (push reads entries this way, so pushing
 * does not reorder the LRU). */
kf_status kf_cache_read_entry(kf_cache *c, const char *key, kf_cache_entry **out, kf_diag *diag);

/* Unix time in milliseconds. */
int64_t kf_cache_now_ms(void);

#endif
