/* cache/store.c — the local store: one SQLite database, DIR/index.sqlite,
 * in WAL mode (docs/CACHE.md "The store").
 *
 * Payloads live in the database beside their index row, so an entry is
 * one row written by one transaction: a reader sees the old entry or the
 * whole new one, a process killed mid-write leaves nothing behind (SQLite
 * rolls the WAL back to the last commit), and there are no orphan files to
 * collect. Every write is BEGIN IMMEDIATE (the write lock taken up front,
 * so a writer never fails upgrading a read snapshot) with a busy timeout;
 * synchronous=FULL syncs the WAL at each commit. Reads check each entry's
 * payload hash; a corrupt entry is a warning, is removed and is a miss. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache_int.h"

const char kf_cache_entries_sql[] =
    "CREATE TABLE IF NOT EXISTS entries("
    " key TEXT NOT NULL UNIQUE, payload_hash TEXT NOT NULL, bytes INTEGER NOT NULL,"
    " reward INTEGER NOT NULL, ms REAL NOT NULL, gpu TEXT NOT NULL, policy TEXT NOT NULL,"
    " endpoint TEXT NOT NULL, precision TEXT NOT NULL, arch TEXT NOT NULL, toolkit TEXT NOT NULL,"
    " driver TEXT NOT NULL, codegen INTEGER NOT NULL, created_ms INTEGER NOT NULL,"
    " last_used_ms INTEGER NOT NULL, hits INTEGER NOT NULL, canonical TEXT NOT NULL,"
    " unit_json TEXT NOT NULL, unit_cu TEXT, cubin BLOB, verdict TEXT NOT NULL, evidence TEXT);"
    "CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY KEY, value TEXT NOT NULL);";

static const char schema_sql[] =
    "CREATE INDEX IF NOT EXISTS entries_lru ON entries(last_used_ms);"
    "CREATE TABLE IF NOT EXISTS counters(name TEXT PRIMARY KEY, n INTEGER NOT NULL);"
    "INSERT OR IGNORE INTO counters VALUES('hits', 0), ('misses', 0);";

/* ---- SQLite helpers ------------------------------------------------------- */

kf_status kf_cache_sql_error(sqlite3 *db, const char *file, int rc, const char *what, kf_diag *diag) {
  kf_diag_error(diag, "%s: %s: %s (SQLite error %d)", file, what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc),
                rc);
  switch (rc & 0xff) {
  case SQLITE_NOMEM: return KF_ERR_NOMEM;
  case SQLITE_CORRUPT:
  case SQLITE_NOTADB: return KF_ERR_FORMAT;
  case SQLITE_FULL:
  case SQLITE_IOERR:
  case SQLITE_CANTOPEN:
  case SQLITE_READONLY:
  case SQLITE_PERM:
  case SQLITE_BUSY:
  case SQLITE_LOCKED: return KF_ERR_IO;
  default: return KF_ERR_INTERNAL;
  }
}

kf_status kf_cache_exec(sqlite3 *db, const char *file, const char *sql, kf_diag *diag) {
  int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
  if (rc == SQLITE_OK) return KF_OK;
  char what[160];
  snprintf(what, sizeof what, "running '%.100s'", sql);
  return kf_cache_sql_error(db, file, rc, what, diag);
}

static void sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

kf_status kf_cache_begin_write(sqlite3 *db, const char *file, kf_diag *diag) {
  /* the busy handler already waits; this loop covers the cases where
   * SQLite returns BUSY without calling it (a WAL recovery in progress) */
  for (int i = 0;; i++) {
    int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc == SQLITE_OK) return KF_OK;
    if ((rc & 0xff) != SQLITE_BUSY || i >= 200)
      return kf_cache_sql_error(db, file, rc, "starting a write transaction", diag);
    sleep_ms(5 + i % 20);
  }
}

void kf_cache_rollback(sqlite3 *db) {
  if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

static kf_status prepare(kf_cache *c, const char *sql, sqlite3_stmt **st, kf_diag *diag) {
  int rc = sqlite3_prepare_v2(c->db, sql, -1, st, NULL);
  if (rc == SQLITE_OK) return KF_OK;
  char what[160];
  snprintf(what, sizeof what, "preparing '%.100s'", sql);
  return kf_cache_sql_error(c->db, c->db_path, rc, what, diag);
}

static kf_status exec(kf_cache *c, const char *sql, kf_diag *diag) {
  return kf_cache_exec(c->db, c->db_path, sql, diag);
}

/* ---- rows <-> entries ----------------------------------------------------- */

static char *col_text(sqlite3_stmt *st, int i, bool *oom) {
  if (sqlite3_column_type(st, i) == SQLITE_NULL) return NULL;
  const unsigned char *t = sqlite3_column_text(st, i);
  int n = sqlite3_column_bytes(st, i);
  char *s = malloc((size_t)n + 1);
  if (!s || (!t && n)) {
    free(s);
    *oom = true;
    return NULL;
  }
  if (n) memcpy(s, t, (size_t)n);
  s[n] = 0;
  return s;
}

static void col_hex(sqlite3_stmt *st, int i, char out[65]) {
  const unsigned char *t = sqlite3_column_text(st, i);
  snprintf(out, 65, "%s", t ? (const char *)t : "");
}

kf_cache_entry *kf_cache_row_entry(sqlite3_stmt *st, bool meta_only) {
  kf_cache_entry *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  bool oom = false;
  col_hex(st, 0, e->key);
  col_hex(st, 1, e->payload_hash);
  e->bytes = sqlite3_column_int64(st, 2);
  e->reward = sqlite3_column_int(st, 3);
  e->ms = sqlite3_column_double(st, 4);
  e->gpu = col_text(st, 5, &oom);
  e->policy = col_text(st, 6, &oom);
  e->endpoint = col_text(st, 7, &oom);
  e->precision = col_text(st, 8, &oom);
  e->arch = col_text(st, 9, &oom);
  e->toolkit = col_text(st, 10, &oom);
  e->driver = col_text(st, 11, &oom);
  e->codegen = sqlite3_column_int(st, 12);
  e->created_ms = sqlite3_column_int64(st, 13);
  e->last_used_ms = sqlite3_column_int64(st, 14);
  e->hits = sqlite3_column_int64(st, 15);
  e->canonical = col_text(st, 16, &oom);
  if (!meta_only) {
    e->unit_json = col_text(st, 17, &oom);
    e->unit_cu = col_text(st, 18, &oom);
    if (sqlite3_column_type(st, 19) != SQLITE_NULL) {
      const void *b = sqlite3_column_blob(st, 19);
      int n = sqlite3_column_bytes(st, 19);
      e->cubin = malloc(n ? (size_t)n : 1); /* an empty cubin stays non-NULL */
      if (!e->cubin || (!b && n)) {
        oom = true;
      } else {
        if (n) memcpy(e->cubin, b, (size_t)n);
        e->cubin_bytes = (size_t)n;
      }
    }
    e->verdict = col_text(st, 20, &oom);
    e->evidence = col_text(st, 21, &oom);
  }
  if (oom) {
    kf_cache_entry_destroy(e);
    return NULL;
  }
  return e;
}

static int bind_text(sqlite3_stmt *st, int i, const char *s) {
  return s ? sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC) : sqlite3_bind_null(st, i);
}

int kf_cache_bind_entry(sqlite3_stmt *st, const kf_cache_entry *e) {
  int rc = SQLITE_OK;
#define B(x)                                                                                       \
  do {                                                                                             \
    if (rc == SQLITE_OK) rc = (x);                                                                 \
  } while (0)
  B(bind_text(st, 1, e->key));
  B(bind_text(st, 2, e->payload_hash));
  B(sqlite3_bind_int64(st, 3, e->bytes));
  B(sqlite3_bind_int(st, 4, e->reward));
  B(sqlite3_bind_double(st, 5, e->ms));
  B(bind_text(st, 6, e->gpu));
  B(bind_text(st, 7, e->policy));
  B(bind_text(st, 8, e->endpoint ? e->endpoint : ""));
  B(bind_text(st, 9, e->precision));
  B(bind_text(st, 10, e->arch));
  B(bind_text(st, 11, e->toolkit));
  B(bind_text(st, 12, e->driver));
  B(sqlite3_bind_int(st, 13, e->codegen));
  B(sqlite3_bind_int64(st, 14, e->created_ms));
  B(sqlite3_bind_int64(st, 15, e->last_used_ms));
  B(sqlite3_bind_int64(st, 16, e->hits));
  B(bind_text(st, 17, e->canonical));
  B(bind_text(st, 18, e->unit_json));
  B(bind_text(st, 19, e->unit_cu));
  if (e->cubin)
    B(sqlite3_bind_blob64(st, 20, e->cubin, (sqlite3_uint64)e->cubin_bytes, SQLITE_STATIC));
  else
    B(sqlite3_bind_null(st, 20));
  B(bind_text(st, 21, e->verdict));
  B(bind_text(st, 22, e->evidence));
#undef B
  return rc;
}

/* ---- open / close --------------------------------------------------------- */

void kf_cache_options_init(kf_cache_options *o) {
  memset(o, 0, sizeof *o);
  o->busy_timeout_ms = 30000;
}

static kf_status mkdir_p(const char *dir, kf_diag *diag) {
  char buf[PATH_MAX];
  if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) {
    kf_diag_error(diag, "%s: path too long", dir);
    return KF_ERR_ARG;
  }
  for (char *p = buf + 1;; p++) {
    if (*p != '/' && *p) continue;
    char saved = *p;
    *p = 0;
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
      kf_diag_error(diag, "%s: cannot create the cache directory: %s", buf, strerror(errno));
      return KF_ERR_IO;
    }
    *p = saved;
    if (!saved) break;
  }
  struct stat sb;
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    kf_diag_error(diag, "%s: not a directory", dir);
    return KF_ERR_IO;
  }
  return KF_OK;
}

static char *str_dup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static kf_status set_wal(kf_cache *c, kf_diag *diag) {
  /* switching a new database to WAL needs a moment of exclusive access:
   * retry while a concurrent opener holds it */
  for (int i = 0;; i++) {
    sqlite3_stmt *st = NULL;
    kf_status s = prepare(c, "PRAGMA journal_mode=WAL", &st, diag);
    if (s != KF_OK) return s;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      const unsigned char *m = sqlite3_column_text(st, 0);
      char mode[32];
      snprintf(mode, sizeof mode, "%s", m ? (const char *)m : "?");
      sqlite3_finalize(st); /* m is freed with the statement */
      if (strcmp(mode, "wal") == 0) return KF_OK;
      kf_diag_error(diag, "%s: cannot switch to WAL mode (journal mode '%s'); a file system without "
                    "shared memory (a network mount) cannot hold the cache", c->db_path, mode);
      return KF_ERR_IO;
    }
    sqlite3_finalize(st);
    if ((rc & 0xff) != SQLITE_BUSY || i >= 400)
      return kf_cache_sql_error(c->db, c->db_path, rc, "setting WAL mode", diag);
    sleep_ms(5 + i % 20);
  }
}

static kf_status check_format(kf_cache *c, kf_diag *diag) {
  sqlite3_stmt *st = NULL;
  kf_status s = prepare(c, "SELECT value FROM meta WHERE name = 'format'", &st, diag);
  if (s != KF_OK) return s;
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    const unsigned char *v = sqlite3_column_text(st, 0);
    if (!v || strcmp((const char *)v, KF_CACHE_FORMAT) != 0) {
      kf_diag_error(diag, "%s: a cache of format '%s', not %s: give another --cache DIR or remove it",
                    c->db_path, v ? (const char *)v : "?", KF_CACHE_FORMAT);
      s = KF_ERR_VERSION;
    }
    sqlite3_finalize(st);
    return s;
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return kf_cache_sql_error(c->db, c->db_path, rc, "reading the format", diag);
  return exec(c, "INSERT INTO meta VALUES('format', '" KF_CACHE_FORMAT "')", diag);
}

kf_status kf_cache_open(const char *dir, const kf_cache_options *o, kf_cache **out, kf_diag *diag) {
  *out = NULL;
  kf_status s = mkdir_p(dir, diag);
  if (s != KF_OK) return s;
  kf_cache *c = calloc(1, sizeof *c);
  if (!c) return KF_ERR_NOMEM;
  if (o)
    c->opts = *o;
  else
    kf_cache_options_init(&c->opts);
  size_t n = strlen(dir) + 32;
  c->dir = str_dup(dir);
  c->db_path = malloc(n);
  if (!c->dir || !c->db_path) {
    kf_cache_close(c);
    return KF_ERR_NOMEM;
  }
  snprintf(c->db_path, n, "%s/index.sqlite", dir);
  int rc = sqlite3_open_v2(c->db_path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           NULL);
  if (rc != SQLITE_OK) {
    s = kf_cache_sql_error(c->db, c->db_path, rc, "opening the cache", diag);
    goto fail;
  }
  sqlite3_extended_result_codes(c->db, 1);
  rc = sqlite3_busy_timeout(c->db, c->opts.busy_timeout_ms > 0 ? c->opts.busy_timeout_ms : 30000);
  if (rc != SQLITE_OK) {
    s = kf_cache_sql_error(c->db, c->db_path, rc, "setting the busy timeout", diag);
    goto fail;
  }
  /* auto_vacuum takes effect only before the first table exists */
  if ((s = exec(c, "PRAGMA auto_vacuum = INCREMENTAL", diag)) != KF_OK) goto fail;
  if ((s = set_wal(c, diag)) != KF_OK) goto fail;
  if ((s = exec(c, "PRAGMA synchronous = FULL", diag)) != KF_OK) goto fail;
  if ((s = kf_cache_begin_write(c->db, c->db_path, diag)) != KF_OK) goto fail;
  if ((s = exec(c, kf_cache_entries_sql, diag)) != KF_OK || (s = exec(c, schema_sql, diag)) != KF_OK ||
      (s = check_format(c, diag)) != KF_OK) {
    kf_cache_rollback(c->db);
    goto fail;
  }
  if ((s = exec(c, "COMMIT", diag)) != KF_OK) goto fail;
  /* tells backup tools (and people) the directory can be dropped */
  char tag[PATH_MAX];
  snprintf(tag, sizeof tag, "%s/CACHEDIR.TAG", dir);
  if (access(tag, F_OK) != 0) {
    static const char text[] = "Signature: 8a477f597d28d172789f06886806bc55\n"
                               "# This file is a cache directory tag created by kfuse (docs/CACHE.md).\n";
    kf_strbuf ignored;
    kf_strbuf_init(&ignored);
    kf_diag quiet;
    kf_diag_init(&quiet, kf_diag_to_strbuf, &ignored);
    (void)kf_write_file_atomic(tag, text, sizeof text - 1, &quiet); /* only a courtesy */
    kf_strbuf_fini(&ignored);
  }
  *out = c;
  return KF_OK;
fail:
  kf_cache_close(c);
  return s;
}

void kf_cache_close(kf_cache *c) {
  if (!c) return;
  /* the gets' bookkeeping; a failure costs counts and LRU order, nothing
   * else, and close has nobody to tell */
  if (c->db) (void)kf_cache_flush_uses(c, NULL);
  free(c->uses);
  if (c->db) sqlite3_close_v2(c->db); /* statements are always finalized before we return */
  free(c->dir);
  free(c->db_path);
  free(c);
}

const char *kf_cache_dir(const kf_cache *c) { return c->dir; }

/* ---- put ------------------------------------------------------------------ */

/* the replace rule: higher reward, then strictly faster on the same GPU */
static bool better(const kf_cache_entry *n, const kf_cache_entry *o) {
  if (n->reward != o->reward) return n->reward > o->reward;
  return o->gpu && strcmp(n->gpu, o->gpu) == 0 && n->ms < o->ms;
}

static kf_status check_put(const kf_cache_entry *e, kf_diag *diag) {
  if (!kf_cache_key_hex_valid(e->key)) {
    kf_diag_error(diag, "cache put: key '%.70s' is not 64 lowercase hex digits", e->key);
    return KF_ERR_ARG;
  }
  kf_cache_key_fields f = {e->canonical, e->precision, e->arch, e->toolkit, e->driver, e->codegen};
  kf_cache_key k;
  kf_status s = kf_cache_key_make(&f, &k, diag);
  if (s != KF_OK) return s;
  if (strcmp(k.hex, e->key) != 0) {
    kf_diag_error(diag, "cache put: key %.16s is not the key of the entry's fields (%.16s)", e->key, k.hex);
    return KF_ERR_ARG;
  }
  if (e->reward < 1) {
    kf_diag_error(diag, "cache put %.16s: reward %d: only units the judge verified (reward >= 1) are stored",
                  e->key, e->reward);
    return KF_ERR_ARG;
  }
  if (!e->unit_json || !e->verdict || !e->gpu || !e->gpu[0] || !e->policy || !e->policy[0]) {
    kf_diag_error(diag, "cache put %.16s: unit_json, verdict, gpu and policy are required", e->key);
    return KF_ERR_ARG;
  }
  if (!isfinite(e->ms) || e->ms < 0) {
    kf_diag_error(diag, "cache put %.16s: time %g ms is not a finite time", e->key, e->ms);
    return KF_ERR_ARG;
  }
  if (e->endpoint && (strchr(e->endpoint, '@') || strchr(e->endpoint, '?'))) {
    kf_diag_error(diag, "cache put %.16s: the endpoint name holds credentials or a query; store "
                  "kf_cache_endpoint_name()'s form", e->key);
    return KF_ERR_ARG;
  }
  return KF_OK;
}

/* Inside a write transaction: evict least-recently-used entries (never
 * keep) until the payload bytes are at most max_bytes. */
static kf_status evict_locked(kf_cache *c, int64_t max_bytes, const char *keep, int64_t *n_evicted,
                              int64_t *freed, kf_diag *diag) {
  sqlite3_stmt *st = NULL;
  kf_status s = prepare(c, "SELECT coalesce(sum(bytes), 0) FROM entries", &st, diag);
  if (s != KF_OK) return s;
  int rc = sqlite3_step(st);
  int64_t total = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW) return kf_cache_sql_error(c->db, c->db_path, rc, "summing the entries' bytes", diag);
  if (total <= max_bytes) return KF_OK;
  /* the victims first, then the deletes: no writes under an open SELECT */
  size_t n = 0, cap = 16;
  char (*victims)[65] = malloc(cap * sizeof *victims);
  if (!victims) return KF_ERR_NOMEM;
  if ((s = prepare(c, "SELECT key, bytes FROM entries ORDER BY last_used_ms, created_ms, key", &st, diag)) !=
      KF_OK)
    goto done;
  while (total > max_bytes && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    const unsigned char *k = sqlite3_column_text(st, 0);
    if (!k || (keep && strcmp((const char *)k, keep) == 0)) continue;
    if (n == cap) {
      void *nv = realloc(victims, 2 * cap * sizeof *victims);
      if (!nv) {
        s = KF_ERR_NOMEM;
        break;
      }
      victims = nv;
      cap *= 2;
    }
    snprintf(victims[n++], 65, "%s", (const char *)k);
    total -= sqlite3_column_int64(st, 1);
    if (freed) *freed += sqlite3_column_int64(st, 1);
  }
  if (s == KF_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
    s = kf_cache_sql_error(c->db, c->db_path, rc, "listing entries by last use", diag);
  sqlite3_finalize(st);
  st = NULL;
  if (s != KF_OK) goto done;
  if ((s = prepare(c, "DELETE FROM entries WHERE key = ?", &st, diag)) != KF_OK) goto done;
  for (size_t i = 0; i < n; i++) {
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, victims[i], -1, SQLITE_STATIC);
    if ((rc = sqlite3_step(st)) != SQLITE_DONE) {
      s = kf_cache_sql_error(c->db, c->db_path, rc, "evicting an entry", diag);
      break;
    }
    if (n_evicted) ++*n_evicted;
  }
done:
  sqlite3_finalize(st);
  free(victims);
  return s;
}

kf_status kf_cache_read_entry(kf_cache *c, const char *key, kf_cache_entry **out, kf_diag *diag) {
  *out = NULL;
  sqlite3_stmt *st = NULL;
  kf_status s = prepare(c, "SELECT " ENTRY_COLS " FROM entries WHERE key = ?", &st, diag);
  if (s != KF_OK) return s;
  int rc = sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    *out = kf_cache_row_entry(st, false);
    if (!*out) s = KF_ERR_NOMEM;
  } else if (rc != SQLITE_DONE) {
    char what[96];
    snprintf(what, sizeof what, "reading entry %.16s", key);
    s = kf_cache_sql_error(c->db, c->db_path, rc, what, diag);
  }
  sqlite3_finalize(st);
  return s;
}

kf_status kf_cache_put(kf_cache *c, const kf_cache_entry *e, kf_cache_put_result *res, kf_diag *diag) {
  kf_status s = check_put(e, diag);
  if (s != KF_OK) return s;
  kf_cache_entry w = *e;
  int64_t now = kf_cache_now_ms();
  if (!w.endpoint) w.endpoint = "";
  if (!w.created_ms) w.created_ms = now;
  if (!w.last_used_ms) w.last_used_ms = w.created_ms;
  w.hits = 0;
  w.bytes = kf_cache_payload_bytes(&w);
  kf_cache_payload_hash(&w, w.payload_hash);

  kf_cache_put_result r = KF_CACHE_PUT_NEW;
  kf_cache_entry *old = NULL;
  sqlite3_stmt *st = NULL;
  if ((s = kf_cache_begin_write(c->db, c->db_path, diag)) != KF_OK) return s;
  if ((s = kf_cache_read_entry(c, w.key, &old, diag)) != KF_OK) goto fail;
  if (old) {
    char why[160];
    if (kf_cache_entry_corrupt(old, why, sizeof why)) {
      kf_diag_warn(diag, "%s: cache entry %.16s is corrupt (%s): replaced", c->db_path, w.key, why);
      r = KF_CACHE_PUT_REPLACED;
    } else if (strcmp(old->payload_hash, w.payload_hash) != 0 && better(&w, old)) {
      r = KF_CACHE_PUT_REPLACED;
    } else {
      r = KF_CACHE_PUT_KEPT;
    }
  }
  if (r != KF_CACHE_PUT_KEPT) {
    if ((s = prepare(c, "INSERT OR REPLACE INTO entries(" ENTRY_COLS ") VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                     &st, diag)) != KF_OK)
      goto fail;
    int rc = kf_cache_bind_entry(st, &w);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (rc != SQLITE_DONE) {
      s = kf_cache_sql_error(c->db, c->db_path, rc, "writing an entry", diag);
      goto fail;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (c->opts.max_bytes > 0 && (s = evict_locked(c, c->opts.max_bytes, w.key, NULL, NULL, diag)) != KF_OK)
      goto fail;
  }
  if ((s = exec(c, "COMMIT", diag)) != KF_OK) goto fail;
  kf_cache_entry_destroy(old);
  if (res) *res = r;
  return KF_OK;
fail:
  sqlite3_finalize(st);
  kf_cache_rollback(c->db);
  kf_cache_entry_destroy(old);
  return s;
}

/* ---- get ------------------------------------------------------------------ */

/* Remove key's entry; with hash, only if it still has that payload hash
 * (another process may have replaced a corrupt entry meanwhile). */
static kf_status remove_entry(kf_cache *c, const char *key, const char *hash, kf_diag *diag) {
  sqlite3_stmt *st = NULL;
  kf_status s = kf_cache_begin_write(c->db, c->db_path, diag);
  if (s != KF_OK) return s;
  if ((s = prepare(c, hash ? "DELETE FROM entries WHERE key = ? AND payload_hash = ?"
                           : "DELETE FROM entries WHERE key = ?", &st, diag)) != KF_OK)
    goto fail;
  int rc = sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK && hash) rc = sqlite3_bind_text(st, 2, hash, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_step(st);
  if (rc != SQLITE_DONE) {
    s = kf_cache_sql_error(c->db, c->db_path, rc, "removing an entry", diag);
    goto fail;
  }
  sqlite3_finalize(st);
  return exec(c, "COMMIT", diag);
fail:
  sqlite3_finalize(st);
  kf_cache_rollback(c->db);
  return s;
}

static kf_status remove_corrupt(kf_cache *c, const char *key, const char *hash, kf_diag *diag) {
  return remove_entry(c, key, hash, diag);
}

kf_status kf_cache_remove(kf_cache *c, const char *key_hex, kf_diag *diag) {
  if (!kf_cache_key_hex_valid(key_hex)) {
    kf_diag_error(diag, "%s: not a cache key (64 lowercase hex digits)", key_hex ? key_hex : "(null)");
    return KF_ERR_ARG;
  }
  return remove_entry(c, key_hex, NULL, diag);
}

/* The hit (last use, hit counts) or the miss counted, in memory; written
 * by kf_cache_flush_uses once 64 hits are pending, and before anything
 * reads the counts. Bookkeeping only: a process killed before its flush
 * loses its counts and last uses, never an entry. */
static kf_status touch(kf_cache *c, const kf_cache_entry *hit, kf_diag *diag) {
  if (!hit) {
    c->pending_misses++;
    return KF_OK;
  }
  if (c->n_uses == c->cap_uses) {
    int cap = c->cap_uses ? c->cap_uses * 2 : 64;
    kf_cache_use *u = realloc(c->uses, (size_t)cap * sizeof *u);
    if (!u) return kf_cache_flush_uses(c, diag); /* write what is pending instead of growing */
    c->uses = u;
    c->cap_uses = cap;
  }
  kf_cache_use *u = &c->uses[c->n_uses++];
  memcpy(u->key, hit->key, sizeof u->key);
  memcpy(u->hash, hit->payload_hash, sizeof u->hash);
  u->at_ms = kf_cache_now_ms();
  return c->n_uses >= 64 ? kf_cache_flush_uses(c, diag) : KF_OK;
}

kf_status kf_cache_flush_uses(kf_cache *c, kf_diag *diag) {
  if (!c->n_uses && !c->pending_misses) return KF_OK;
  sqlite3_stmt *st = NULL;
  kf_status s = kf_cache_begin_write(c->db, c->db_path, diag);
  if (s != KF_OK) return s;
  if ((s = prepare(c, "UPDATE entries SET last_used_ms = max(last_used_ms, ?), hits = hits + 1 "
                      "WHERE key = ? AND payload_hash = ?", &st, diag)) != KF_OK)
    goto fail;
  for (int i = 0; i < c->n_uses; i++) {
    int rc = sqlite3_bind_int64(st, 1, c->uses[i].at_ms);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 2, c->uses[i].key, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 3, c->uses[i].hash, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (rc != SQLITE_DONE) {
      s = kf_cache_sql_error(c->db, c->db_path, rc, "recording hits", diag);
      goto fail;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
  }
  sqlite3_finalize(st);
  st = NULL;
  char sql[160];
  snprintf(sql, sizeof sql, "UPDATE counters SET n = n + %d WHERE name = 'hits'", c->n_uses);
  if ((s = exec(c, sql, diag)) != KF_OK) goto fail;
  snprintf(sql, sizeof sql, "UPDATE counters SET n = n + %lld WHERE name = 'misses'", (long long)c->pending_misses);
  if ((s = exec(c, sql, diag)) != KF_OK) goto fail;
  if ((s = exec(c, "COMMIT", diag)) != KF_OK) goto fail;
  c->n_uses = 0;
  c->pending_misses = 0;
  return KF_OK;
fail:
  sqlite3_finalize(st);
  kf_cache_rollback(c->db);
  return s;
}

static const char *text_of(kf_strbuf *b) {
  while (b->len && b->data[b->len - 1] == '\n') b->data[--b->len] = 0;
  return b->data ? b->data : "";
}

kf_status kf_cache_get(kf_cache *c, const char *key_hex, kf_cache_entry **out, kf_diag *diag) {
  *out = NULL;
  if (!kf_cache_key_hex_valid(key_hex)) {
    kf_diag_error(diag, "cache get: key '%.70s' is not 64 lowercase hex digits", key_hex ? key_hex : "(null)");
    return KF_ERR_ARG;
  }
  kf_cache_entry *e = NULL;
  /* a collecting sink: a damaged database is a warning and a miss */
  kf_strbuf msg;
  kf_strbuf_init(&msg);
  kf_diag local;
  kf_diag_init(&local, kf_diag_to_strbuf, &msg);
  kf_status s = kf_cache_read_entry(c, key_hex, &e, &local);
  if (s == KF_ERR_FORMAT || s == KF_ERR_INTERNAL) {
    kf_diag_warn(diag, "cache entry %.16s could not be read, treated as a miss: %s", key_hex,
                 text_of(&msg));
    s = KF_OK;
    e = NULL;
  } else if (s != KF_OK) {
    kf_diag_error(diag, "%s", text_of(&msg));
  }
  kf_strbuf_fini(&msg);
  if (s != KF_OK) return s;
  char why[160];
  if (e && kf_cache_entry_corrupt(e, why, sizeof why)) {
    kf_diag_warn(diag, "%s: cache entry %.16s is corrupt (%s): removed, treated as a miss", c->db_path,
                 key_hex, why);
    kf_status r = remove_corrupt(c, e->key, e->payload_hash, diag);
    kf_cache_entry_destroy(e);
    e = NULL;
    if (r != KF_OK) kf_diag_warn(diag, "%s: the corrupt entry %.16s stays (see above)", c->db_path, key_hex);
  }
  /* the entry is already ours: a failed bookkeeping write costs LRU
   * accuracy, not the hit */
  kf_strbuf_init(&msg);
  kf_diag_init(&local, kf_diag_to_strbuf, &msg);
  if (touch(c, e, &local) != KF_OK)
    kf_diag_warn(diag, "cache: recording a %s failed: %s", e ? "hit" : "miss", text_of(&msg));
  kf_strbuf_fini(&msg);
  if (e) e->last_used_ms = kf_cache_now_ms();
  *out = e;
  return KF_OK;
}

/* ---- stats, list ---------------------------------------------------------- */

static int64_t file_size(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0;
}

kf_status kf_cache_get_stats(kf_cache *c, kf_cache_stats *out, kf_diag *diag) {
  kf_status fs = kf_cache_flush_uses(c, diag); /* the counts and last uses this reads */
  if (fs != KF_OK) return fs;
  memset(out, 0, sizeof *out);
  sqlite3_stmt *st = NULL;
  kf_status s = prepare(c,
                        "SELECT count(*), coalesce(sum(bytes), 0),"
                        " (SELECT n FROM counters WHERE name = 'hits'),"
                        " (SELECT n FROM counters WHERE name = 'misses') FROM entries",
                        &st, diag);
  if (s != KF_OK) return s;
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    out->entries = sqlite3_column_int64(st, 0);
    out->bytes = sqlite3_column_int64(st, 1);
    out->hits = sqlite3_column_int64(st, 2);
    out->misses = sqlite3_column_int64(st, 3);
  } else {
    s = kf_cache_sql_error(c->db, c->db_path, rc, "counting entries", diag);
  }
  sqlite3_finalize(st);
  char wal[PATH_MAX];
  snprintf(wal, sizeof wal, "%s-wal", c->db_path);
  out->file_bytes = file_size(c->db_path) + file_size(wal);
  return s;
}

kf_status kf_cache_list(kf_cache *c, kf_cache_list_fn fn, void *user, kf_diag *diag) {
  kf_status fs = kf_cache_flush_uses(c, diag); /* the counts and last uses this reads */
  if (fs != KF_OK) return fs;
  sqlite3_stmt *st = NULL;
  kf_status s = exec(c, "BEGIN", diag);
  if (s != KF_OK) return s;
  if ((s = prepare(c, "SELECT " ENTRY_META_COLS " FROM entries ORDER BY key", &st, diag)) != KF_OK) goto done;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    kf_cache_entry *e = kf_cache_row_entry(st, true);
    if (!e) {
      s = KF_ERR_NOMEM;
      break;
    }
    int stop = fn(user, e);
    kf_cache_entry_destroy(e);
    if (stop) break;
  }
  if (s == KF_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
    s = kf_cache_sql_error(c->db, c->db_path, rc, "listing entries", diag);
done:
  sqlite3_finalize(st);
  kf_cache_rollback(c->db); /* a read transaction: nothing to keep */
  return s;
}

/* ---- verify, gc ----------------------------------------------------------- */

kf_status kf_cache_verify(kf_cache *c, int64_t *n_ok, int64_t *n_corrupt, kf_diag *diag) {
  kf_status fs = kf_cache_flush_uses(c, diag); /* the counts and last uses this reads */
  if (fs != KF_OK) return fs;
  int64_t ok = 0, bad = 0;
  sqlite3_stmt *st = NULL;
  kf_status s = prepare(c, "PRAGMA quick_check", &st, diag);
  if (s != KF_OK) return s;
  int rc;
  kf_strbuf problems;
  kf_strbuf_init(&problems);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const unsigned char *t = sqlite3_column_text(st, 0);
    if (t && strcmp((const char *)t, "ok") != 0) kf_strbuf_printf(&problems, "%s%s", problems.len ? "; " : "", t);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    kf_strbuf_fini(&problems);
    return kf_cache_sql_error(c->db, c->db_path, rc, "checking the database (quick_check)", diag);
  }
  if (problems.len) {
    kf_diag_error(diag, "%s: the database is damaged (SQLite quick_check: %.600s); export what still reads "
                  "or remove the directory", c->db_path, problems.data);
    kf_strbuf_fini(&problems);
    return KF_ERR_FORMAT;
  }
  kf_strbuf_fini(&problems);

  /* one snapshot read; the corrupt ones removed afterwards */
  size_t n = 0, cap = 8;
  char (*corrupt)[2][65] = malloc(cap * sizeof *corrupt);
  if (!corrupt) return KF_ERR_NOMEM;
  if ((s = exec(c, "BEGIN", diag)) != KF_OK) goto done;
  if ((s = prepare(c, "SELECT " ENTRY_COLS " FROM entries ORDER BY key", &st, diag)) != KF_OK) goto done;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    kf_cache_entry *e = kf_cache_row_entry(st, false);
    if (!e) {
      s = KF_ERR_NOMEM;
      break;
    }
    char why[160];
    if (kf_cache_entry_corrupt(e, why, sizeof why)) {
      kf_diag_warn(diag, "%s: cache entry %.16s is corrupt (%s): removed", c->db_path, e->key, why);
      if (n == cap) {
        void *nc = realloc(corrupt, 2 * cap * sizeof *corrupt);
        if (!nc) {
          kf_cache_entry_destroy(e);
          s = KF_ERR_NOMEM;
          break;
        }
        corrupt = nc;
        cap *= 2;
      }
      snprintf(corrupt[n][0], 65, "%s", e->key);
      snprintf(corrupt[n][1], 65, "%s", e->payload_hash);
      n++;
      bad++;
    } else {
      ok++;
    }
    kf_cache_entry_destroy(e);
  }
  if (s == KF_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
    s = kf_cache_sql_error(c->db, c->db_path, rc, "reading entries", diag);
  sqlite3_finalize(st);
  st = NULL;
  kf_cache_rollback(c->db);
  for (size_t i = 0; s == KF_OK && i < n; i++) s = remove_corrupt(c, corrupt[i][0], corrupt[i][1], diag);
done:
  sqlite3_finalize(st);
  kf_cache_rollback(c->db);
  free(corrupt);
  if (n_ok) *n_ok = ok;
  if (n_corrupt) *n_corrupt = bad;
  return s;
}

kf_status kf_cache_gc(kf_cache *c, int64_t max_bytes, int64_t *n_evicted, int64_t *bytes_freed, kf_diag *diag) {
  kf_status fs = kf_cache_flush_uses(c, diag); /* the counts and last uses this reads */
  if (fs != KF_OK) return fs;
  int64_t ne = 0, nb = 0;
  if (max_bytes < 0) {
    kf_diag_error(diag, "cache gc: --max-bytes %lld is negative", (long long)max_bytes);
    return KF_ERR_ARG;
  }
  kf_status s = kf_cache_begin_write(c->db, c->db_path, diag);
  if (s != KF_OK) return s;
  if ((s = evict_locked(c, max_bytes, NULL, &ne, &nb, diag)) != KF_OK ||
      (s = exec(c, "COMMIT", diag)) != KF_OK) {
    kf_cache_rollback(c->db);
    return s;
  }
  /* give the freed pages back; both are best effort (another process may
   * be reading, which blocks the checkpoint's truncation) */
  if (ne) {
    sqlite3_exec(c->db, "PRAGMA incremental_vacuum", NULL, NULL, NULL);
    sqlite3_exec(c->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
  }
  if (n_evicted) *n_evicted = ne;
  if (bytes_freed) *bytes_freed = nb;
  return KF_OK;
}
