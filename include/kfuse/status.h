/* kfuse/status.h — status codes, diagnostics and output callbacks shared by
 * every module.
 *
 * Every fallible public function returns a kf_status and writes its results
 * through out-parameters. Human-readable messages (what went wrong, and where:
 * file, node, op, field) go to a kf_diag sink supplied by the caller, so that
 * library users and the agent loop can recover instead of the process exiting.
 * Broken internal invariants abort through KF_ASSERT with file and line. */
#ifndef KFUSE_STATUS_H
#define KFUSE_STATUS_H

#include <stdarg.h>
#include <stddef.h>

#if defined(__GNUC__)
#define KF_API __attribute__((visibility("default")))
#define KF_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define KF_API
#define KF_PRINTF(f, a)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Append-only: values are stable across releases. */
typedef enum kf_status {
  KF_OK = 0,
  KF_ERR_NOMEM = 1,       /* allocation failed */
  KF_ERR_IO = 2,          /* file missing, unreadable or unwritable */
  KF_ERR_FORMAT = 3,      /* malformed archive, JSON, text or binary record */
  KF_ERR_VERSION = 4,     /* format version we do not read */
  KF_ERR_UNSUPPORTED = 5, /* valid input using an op, dtype or feature we lack */
  KF_ERR_INVALID = 6,     /* IR violates an invariant (shape, dtype, attribute) */
  KF_ERR_ARG = 7,         /* bad argument or command-line usage */
  KF_ERR_LIMIT = 8,       /* input exceeds a configured limit */
  KF_ERR_MISMATCH = 9,    /* numeric comparison against a reference failed */
  KF_ERR_INTERNAL = 10,   /* a dependency failed in an unexpected way */
} kf_status;

/* Short stable description of a status ("format error", ...). */
KF_API const char *kf_status_str(kf_status s);

typedef enum kf_diag_level {
  KF_DIAG_ERROR = 0,
  KF_DIAG_WARNING = 1,
  KF_DIAG_NOTE = 2,
} kf_diag_level;

/* Receives one complete message, without a trailing newline. */
typedef void (*kf_diag_fn)(void *user, kf_diag_level level, const char *msg);

/* A diagnostic sink. Caller storage; fn == NULL means "print to stderr". */
typedef struct kf_diag {
  kf_diag_fn fn;
  void *user;
  int n_errors;
  int n_warnings;
} kf_diag;

/* Initialise a sink; fn may be NULL for stderr. */
KF_API void kf_diag_init(kf_diag *d, kf_diag_fn fn, void *user);
/* Report a message. d may be NULL: the message then goes to stderr. */
KF_API void kf_diag_report(kf_diag *d, kf_diag_level level, const char *fmt,
                           ...) KF_PRINTF(3, 4);
KF_API void kf_diag_vreport(kf_diag *d, kf_diag_level level, const char *fmt,
                            va_list ap);
#define kf_diag_error(d, ...) kf_diag_report((d), KF_DIAG_ERROR, __VA_ARGS__)
#define kf_diag_warn(d, ...) kf_diag_report((d), KF_DIAG_WARNING, __VA_ARGS__)
#define kf_diag_note(d, ...) kf_diag_report((d), KF_DIAG_NOTE, __VA_ARGS__)

/* Output callback: every printer in kfuse writes through one of these, so
 * the same printer serves files, buffers and network bodies. Returns 0 on
 * success, non-zero on a write failure (which the printer propagates). */
typedef int (*kf_write_fn)(void *user, const char *data, size_t n);

/* Ready-made writers: user is a FILE* / a kf_strbuf*. */
KF_API int kf_write_file(void *file, const char *data, size_t n);

/* Growable string buffer; caller storage. */
typedef struct kf_strbuf {
  char *data; /* always NUL-terminated when non-NULL */
  size_t len;
  size_t cap;
  int failed; /* set on allocation failure; further appends are dropped */
} kf_strbuf;

KF_API void kf_strbuf_init(kf_strbuf *b);
KF_API void kf_strbuf_fini(kf_strbuf *b);
KF_API void kf_strbuf_append(kf_strbuf *b, const char *s, size_t n);
KF_API void kf_strbuf_printf(kf_strbuf *b, const char *fmt, ...) KF_PRINTF(2, 3);
KF_API int kf_write_strbuf(void *strbuf, const char *data, size_t n);
/* A kf_diag_fn appending each message to the kf_strbuf user points at, a
 * line each, prefixed "error: ", "warning: " or "note: ". */
KF_API void kf_diag_to_strbuf(void *strbuf, kf_diag_level level, const char *msg);

/* Seconds on the monotonic clock (durations and deadlines). */
KF_API double kf_now_s(void);
/* Sleep s seconds (resumed after signals); nothing for s <= 0. */
KF_API void kf_sleep_s(double s);
/* A factor in [0.5, 1) to jitter retry backoff with, so the retries of
 * many clients spread out (per-thread xorshift, seeded by time and pid). */
KF_API double kf_jitter(void);

/* The whole of the regular file at path, NUL-terminated, into *out
 * (malloc'd): an error naming the file when it cannot be opened, is not a
 * regular file (a FIFO does not block), is larger than max bytes or holds a
 * NUL byte. */
KF_API kf_status kf_read_text(const char *path, long max, char **out, kf_diag *diag);

/* n bytes to path through a temporary file beside it (PATH.tmpPID) renamed
 * into place: a reader sees the old file or the whole new one. An error
 * naming the file when it cannot be written. */
KF_API kf_status kf_write_file_atomic(const char *path, const char *data, size_t n, kf_diag *diag);

/* Abort with file and line: for broken internal invariants only. */
KF_API void kf_panic(const char *file, int line, const char *msg)
    __attribute__((noreturn));
#define KF_ASSERT(c)                                                          \
  do {                                                                        \
    if (!(c))                                                                 \
      kf_panic(__FILE__, __LINE__, "assertion failed: " #c);                  \
  } while (0)

#ifdef __cplusplus
}
#endif
#endif
