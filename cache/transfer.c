/* cache/transfer.c — a cache as one file (kfuse cache export / import): a
 * SQLite database with the store's entries table and a meta row naming
 * its format, KF_CACHE_EXPORT_FORMAT. Export reads one snapshot of the
 * store, writes a temporary file beside the target, syncs it and renames
 * it into place; import checks every entry's hash and key and puts it
 * with the store's replace rule, so importing into a warm cache keeps
 * whichever unit is better. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache_int.h"

static kf_status sync_path(const char *path, kf_diag *diag) {
  int fd = open(path, O_RDONLY);
  if (fd < 0 || fsync(fd) != 0) {
    kf_diag_error(diag, "%s: cannot sync: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return KF_ERR_IO;
  }
  close(fd);
  return KF_OK;
}

static void sync_parent(const char *path) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash == dir)
    dir[1] = 0;
  else if (slash)
    *slash = 0;
  else
    snprintf(dir, sizeof dir, ".");
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    fsync(fd); /* the rename's durability; a failure here loses nothing already readable */
    close(fd);
  }
}

kf_status kf_cache_export(kf_cache *c, const char *path, int64_t *n, kf_diag *diag) {
  kf_status fs = kf_cache_flush_uses(c, diag); /* the counts and last uses this reads */
  if (fs != KF_OK) return fs;
  int64_t count = 0;
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid()) >= (int)sizeof tmp) {
    kf_diag_error(diag, "%s: path too long", path);
    return KF_ERR_ARG;
  }
  remove(tmp);
  sqlite3 *ex = NULL;
  sqlite3_stmt *rd = NULL, *wr = NULL;
  kf_status s = KF_OK;
  int rc = sqlite3_open_v2(tmp, &ex, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc != SQLITE_OK) {
    s = kf_cache_sql_error(ex, tmp, rc, "creating the export file", diag);
    goto done;
  }
  /* a private temporary file: no journal; it is synced whole before the
   * rename makes it visible */
  if ((s = kf_cache_exec(ex, tmp, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF", diag)) != KF_OK ||
      (s = kf_cache_exec(ex, tmp, kf_cache_entries_sql, diag)) != KF_OK ||
      (s = kf_cache_exec(ex, tmp, "INSERT INTO meta VALUES('format', '" KF_CACHE_EXPORT_FORMAT "');"
                                  "BEGIN", diag)) != KF_OK)
    goto done;
  if ((s = kf_cache_exec(c->db, c->db_path, "BEGIN", diag)) != KF_OK) goto done;
  rc = sqlite3_prepare_v2(c->db, "SELECT " ENTRY_COLS " FROM entries ORDER BY key", -1, &rd, NULL);
  if (rc != SQLITE_OK) {
    s = kf_cache_sql_error(c->db, c->db_path, rc, "reading entries to export", diag);
    goto done;
  }
  rc = sqlite3_prepare_v2(ex, "INSERT INTO entries(" ENTRY_COLS ") VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                          -1, &wr, NULL);
  if (rc != SQLITE_OK) {
    s = kf_cache_sql_error(ex, tmp, rc, "preparing the export", diag);
    goto done;
  }
  while ((rc = sqlite3_step(rd)) == SQLITE_ROW) {
    kf_cache_entry *e = kf_cache_row_entry(rd, false);
    if (!e) {
      s = KF_ERR_NOMEM;
      goto done;
    }
    char why[160];
    if (kf_cache_entry_corrupt(e, why, sizeof why)) {
      kf_diag_warn(diag, "%s: cache entry %.16s is corrupt (%s): not exported", c->db_path, e->key, why);
      kf_cache_entry_destroy(e);
      continue;
    }
    sqlite3_reset(wr);
    int wrc = kf_cache_bind_entry(wr, e);
    if (wrc == SQLITE_OK) wrc = sqlite3_step(wr);
    kf_cache_entry_destroy(e);
    if (wrc != SQLITE_DONE) {
      s = kf_cache_sql_error(ex, tmp, wrc, "writing an entry", diag);
      goto done;
    }
    count++;
  }
  if (rc != SQLITE_DONE) {
    s = kf_cache_sql_error(c->db, c->db_path, rc, "reading entries to export", diag);
    goto done;
  }
  sqlite3_finalize(wr);
  wr = NULL;
  if ((s = kf_cache_exec(ex, tmp, "COMMIT", diag)) != KF_OK) goto done;
  rc = sqlite3_close(ex);
  ex = NULL;
  if (rc != SQLITE_OK) {
    s = kf_cache_sql_error(NULL, tmp, rc, "closing the export file", diag);
    goto done;
  }
  if ((s = sync_path(tmp, diag)) != KF_OK) goto done;
  if (rename(tmp, path) != 0) {
    kf_diag_error(diag, "%s: cannot write: %s", path, strerror(errno));
    s = KF_ERR_IO;
    goto done;
  }
  sync_parent(path);
done:
  sqlite3_finalize(rd);
  sqlite3_finalize(wr);
  kf_cache_rollback(c->db);
  if (ex) sqlite3_close(ex);
  if (s != KF_OK) remove(tmp);
  if (n) *n = count;
  return s;
}

kf_status kf_cache_import(kf_cache *c, const char *path, kf_cache_import_counts *counts, kf_diag *diag) {
  kf_cache_import_counts k = {0, 0, 0, 0};
  sqlite3 *im = NULL;
  sqlite3_stmt *st = NULL;
  kf_status s = KF_OK;
  if (access(path, R_OK) != 0) {
    kf_diag_error(diag, "%s: cannot read: %s", path, strerror(errno));
    return KF_ERR_IO;
  }
  int rc = sqlite3_open_v2(path, &im, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc != SQLITE_OK) {
    s = kf_cache_sql_error(im, path, rc, "opening the export file", diag);
    goto done;
  }
  rc = sqlite3_prepare_v2(im, "SELECT value FROM meta WHERE name = 'format'", -1, &st, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_step(st);
  if (rc != SQLITE_ROW || !sqlite3_column_text(st, 0) ||
      strcmp((const char *)sqlite3_column_text(st, 0), KF_CACHE_EXPORT_FORMAT) != 0) {
    if (rc == SQLITE_ROW)
      kf_diag_error(diag, "%s: not a kfuse cache export (format '%s', expected %s)", path,
                    sqlite3_column_text(st, 0) ? (const char *)sqlite3_column_text(st, 0) : "?",
                    KF_CACHE_EXPORT_FORMAT);
    else
      kf_diag_error(diag, "%s: not a kfuse cache export (%s); write one with kfuse cache export", path,
                    sqlite3_errmsg(im));
    s = rc == SQLITE_ROW ? KF_ERR_VERSION : KF_ERR_FORMAT;
    goto done;
  }
  sqlite3_finalize(st);
  st = NULL;
  rc = sqlite3_prepare_v2(im, "SELECT " ENTRY_COLS " FROM entries ORDER BY key", -1, &st, NULL);
  if (rc != SQLITE_OK) {
    s = kf_cache_sql_error(im, path, rc, "reading entries", diag);
    goto done;
  }
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    kf_cache_entry *e = kf_cache_row_entry(st, false);
    if (!e) {
      s = KF_ERR_NOMEM;
      goto done;
    }
    char why[160];
    if (kf_cache_entry_corrupt(e, why, sizeof why)) {
      kf_diag_warn(diag, "%s: entry %.16s is corrupt (%s): not imported", path, e->key, why);
      k.corrupt++;
      kf_cache_entry_destroy(e);
      continue;
    }
    kf_cache_put_result r;
    s = kf_cache_put(c, e, &r, diag);
    kf_cache_entry_destroy(e);
    if (s != KF_OK) goto done;
    if (r == KF_CACHE_PUT_NEW)
      k.added++;
    else if (r == KF_CACHE_PUT_REPLACED)
      k.replaced++;
    else
      k.kept++;
  }
  if (rc != SQLITE_DONE) s = kf_cache_sql_error(im, path, rc, "reading entries", diag);
done:
  sqlite3_finalize(st);
  if (im) sqlite3_close(im);
  if (counts) *counts = k;
  return s;
}
