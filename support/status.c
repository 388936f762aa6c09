/* support/status.c — status strings, diagnostic sinks, string buffers,
 * writers and the text-file reader (see include/kfuse/status.h). */
#include "kfuse/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

const char *kf_status_str(kf_status s) {
  switch (s) {
  case KF_OK: return "ok";
  case KF_ERR_NOMEM: return "out of memory";
  case KF_ERR_IO: return "i/o error";
  case KF_ERR_FORMAT: return "format error";
  case KF_ERR_VERSION: return "unsupported version";
  case KF_ERR_UNSUPPORTED: return "unsupported";
  case KF_ERR_INVALID: return "invalid IR";
  case KF_ERR_ARG: return "bad argument";
  case KF_ERR_LIMIT: return "limit exceeded";
  case KF_ERR_MISMATCH: return "mismatch";
  case KF_ERR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

void kf_diag_init(kf_diag *d, kf_diag_fn fn, void *user) {
  d->fn = fn;
  d->user = user;
  d->n_errors = 0;
  d->n_warnings = 0;
}

static const char *level_name(kf_diag_level l) {
  switch (l) {
  case KF_DIAG_ERROR: return "error";
  case KF_DIAG_WARNING: return "warning";
  case KF_DIAG_NOTE: return "note";
  }
  return "?";
}

void kf_diag_vreport(kf_diag *d, kf_diag_level level, const char *fmt,
                     va_list ap) {
  char small[1024];
  char *msg = small;
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  if (n >= (int)sizeof small) {
    char *big = malloc((size_t)n + 1);
    if (big) {
      vsnprintf(big, (size_t)n + 1, fmt, ap2);
      msg = big;
    }
  }
  va_end(ap2);
  if (d) {
    if (level == KF_DIAG_ERROR) d->n_errors++;
    if (level == KF_DIAG_WARNING) d->n_warnings++;
  }
  if (d && d->fn)
    d->fn(d->user, level, msg);
  else
    fprintf(stderr, "kfuse: %s: %s\n", level_name(level), msg);
  if (msg != small) free(msg);
}

void kf_diag_report(kf_diag *d, kf_diag_level level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kf_diag_vreport(d, level, fmt, ap);
  va_end(ap);
}

int kf_write_file(void *file, const char *data, size_t n) {
  return fwrite(data, 1, n, (FILE *)file) == n ? 0 : -1;
}

void kf_strbuf_init(kf_strbuf *b) { memset(b, 0, sizeof *b); }

void kf_strbuf_fini(kf_strbuf *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}

void kf_strbuf_append(kf_strbuf *b, const char *s, size_t n) {
  if (b->failed) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p) {
      b->failed = 1;
      return;
    }
    b->data = p;
    b->cap = cap;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = 0;
}

void kf_strbuf_printf(kf_strbuf *b, const char *fmt, ...) {
  char small[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->failed = 1;
    return;
  }
  if (n < (int)sizeof small) {
    kf_strbuf_append(b, small, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) {
    b->failed = 1;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  kf_strbuf_append(b, big, (size_t)n);
  free(big);
}

int kf_write_strbuf(void *strbuf, const char *data, size_t n) {
  kf_strbuf *b = strbuf;
  kf_strbuf_append(b, data, n);
  return b->failed ? -1 : 0;
}

void kf_panic(const char *file, int line, const char *msg) {
  fprintf(stderr, "kfuse: internal error at %s:%d: %s\n", file, line, msg);
  abort();
}

/* ---- reading a text file ---- */

kf_status kf_read_text(const char *path, long max, char **out, kf_diag *diag) {
  *out = NULL;
  /* O_NONBLOCK: a FIFO in the unit's place must not hang the reader */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
  if (!f) {
    kf_diag_error(diag, "%s: cannot open: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return KF_ERR_IO;
  }
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    kf_diag_error(diag, "%s: not a regular file", path);
    fclose(f);
    return KF_ERR_IO;
  }
  if (sb.st_size > max) {
    kf_diag_error(diag, "%s: %lld bytes, over the %ld this format allows", path, (long long)sb.st_size, max);
    fclose(f);
    return KF_ERR_LIMIT;
  }
  char *b = malloc((size_t)sb.st_size + 1);
  size_t n = b ? fread(b, 1, (size_t)sb.st_size, f) : 0;
  int err = ferror(f);
  fclose(f);
  if (!b) return KF_ERR_NOMEM;
  if (err || n != (size_t)sb.st_size) {
    kf_diag_error(diag, "%s: read failed", path);
    free(b);
    return KF_ERR_IO;
  }
  b[n] = '\0';
  if (memchr(b, '\0', n)) {
    kf_diag_error(diag, "%s: contains a NUL byte (not text)", path);
    free(b);
    return KF_ERR_FORMAT;
  }
  *out = b;
  return KF_OK;
}

kf_status kf_write_file_atomic(const char *path, const char *data, size_t n, kf_diag *diag) {
  size_t len = strlen(path) + 32;
  char *tmp = malloc(len);
  if (!tmp) {
    kf_diag_error(diag, "%s: out of memory", path);
    return KF_ERR_NOMEM;
  }
  snprintf(tmp, len, "%s.tmp%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    kf_diag_error(diag, "%s: cannot write: %s", path, strerror(errno));
    free(tmp);
    return KF_ERR_IO;
  }
  bool ok = fwrite(data, 1, n, f) == n;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    kf_diag_error(diag, "%s: write failed: %s", path, strerror(errno));
    remove(tmp);
    free(tmp);
    return KF_ERR_IO;
  }
  free(tmp);
  return KF_OK;
}

void kf_diag_to_strbuf(void *strbuf, kf_diag_level level, const char *msg) {
  kf_strbuf_printf(strbuf, "%s%s\n",
                   level == KF_DIAG_ERROR ? "error: " : level == KF_DIAG_WARNING ? "warning: " : "note: ", msg);
}

void kf_sleep_s(double s) {
  if (s <= 0) return;
  struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&t, &t) == -1 && errno == EINTR) {
  }
}

double kf_jitter(void) {
  static _Thread_local uint64_t s;
  if (!s) s = ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid() ^ (uint64_t)(uintptr_t)&s;
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return 0.5 + 0.5 * (double)(s >> 11) / (double)(1ull << 53);
}

double kf_now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
