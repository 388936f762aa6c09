/* tools/serve_int.h — private to `kfuse serve` (docs/AGENT.md, "The
 * rollout service"): HTTP/1.1 over a connected socket (serve_http.c), the
 * service's sessions, GPU queue and routes (serve.c), the command, its
 * listening socket and threads (cmd_serve.c). */
#ifndef KFUSE_SERVE_INT_H
#define KFUSE_SERVE_INT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "kfuse/judge.h"

/* ---- HTTP (serve_http.c) ---- */

/* One connection: its socket and what was read past the last request. */
typedef struct kf_http_conn {
  int fd;
  char *buf;
  size_t len, cap;
} kf_http_conn;

typedef struct kf_http_req {
  char method[16];
  char path[512];  /* the target without its query */
  char *auth;      /* the Authorization header's value, or NULL */
  char *body;      /* NUL-terminated; body_len bytes */
  size_t body_len;
  bool keep_alive;
} kf_http_req;

typedef enum kf_http_read_result {
  KF_HTTP_GOT,    /* a request */
  KF_HTTP_CLOSED, /* the peer closed, went idle, or the service stops */
  KF_HTTP_BAD     /* a malformed or too large request: answer *status, *why and close */
} kf_http_read_result;

/* Read the next request: idle_s to wait for its first byte (in slices,
 * giving up when *stop is set), read_s to read all of it, bodies of at
 * most max_body bytes (Content-Length; chunked ones are refused). */
kf_http_read_result kf_http_read(kf_http_conn *c, kf_http_req *r, size_t max_body, double idle_s, double read_s,
                                 volatile sig_atomic_t *stop, int *status, const char **why);
void kf_http_req_fini(kf_http_req *r);
/* Send a response with a JSON body (NULL: "{}"); false when the peer is
 * gone. */
bool kf_http_send(kf_http_conn *c, int status, const char *body, bool keep_alive);

/* ---- the service (serve.c) ---- */

typedef struct kf_serve_options {
  const char *tasks_dir, *out_dir;
  int gpus;            /* judge calls run on devices 0 .. gpus-1, one at a time each */
  int max_sessions;    /* open at once */
  double idle_s;       /* a session unused this long is closed */
  int max_judge;       /* judge calls a session, at most (a session may ask fewer) */
  int max_calls;       /* tool calls a session, at most */
  const char *token;   /* required as "Authorization: Bearer ..."; NULL: none */
  bool quiet;          /* no line per request on stderr */
  kf_judge_options judge;
} kf_serve_options;

typedef struct kf_serve kf_serve;

/* Check the directories (OUT_DIR made, with OUT_DIR/sessions). */
kf_status kf_serve_create(const kf_serve_options *o, kf_serve **out, kf_diag *diag);
/* Answer one request: the HTTP status, *body a JSON text (malloc'd, or
 * NULL when out of memory). Thread-safe. */
int kf_serve_handle(kf_serve *s, const kf_http_req *r, char **body);
/* Close the sessions idle past the limit. */
void kf_serve_reap(kf_serve *s);
/* Sessions open now. */
int kf_serve_sessions(kf_serve *s);
/* Close every open session (its result written: "the service stopped"),
 * then free; NULL is fine. No request may be in flight. */
void kf_serve_destroy(kf_serve *s);

/* A JSON error body {"error": msg} (malloc'd; NULL when out of memory). */
char *kf_serve_error_body(const char *msg);

#endif
