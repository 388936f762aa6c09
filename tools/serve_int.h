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

typedef enum kf_http_parse_result {
  KF_HTTP_MORE, /* no whole head yet */
  KF_HTTP_HEAD, /* the head is whole (method, path, auth, keep_alive filled), the body not yet */
  KF_HTTP_GOT,  /* a whole request, taken out of the connection's buffer */
  KF_HTTP_BAD   /* a malformed or too large request: answer *status, *why and close */
} kf_http_parse_result;

/* What the socket has now, appended to c->buf without waiting; false on
 * an error or out of memory, *closed when the peer closed (or errored). */
bool kf_http_recv(kf_http_conn *c, bool *closed);
/* Parse the request c->buf holds (fini'ing *r first): heads of at most
 * 16 KiB, bodies of at most max_body bytes (Content-Length; chunked ones
 * are refused); *expect when the client waits for "100 Continue". */
kf_http_parse_result kf_http_parse(kf_http_conn *c, kf_http_req *r, size_t max_body, bool *expect, int *status,
                                   const char **why);
void kf_http_req_fini(kf_http_req *r);
/* Send a response with a JSON body (NULL: "{}"); false when the peer is
 * gone. */
bool kf_http_send(kf_http_conn *c, int status, const char *body, bool keep_alive);
/* Send a short error response ("Connection: close") without waiting: what
 * the client's window does not take is dropped. */
void kf_http_send_now(kf_http_conn *c, int status, const char *body);

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
/* Whether a request with this Authorization header value (NULL: none)
 * may be served; decided from the head, before the body is read. */
bool kf_serve_authorised(kf_serve *s, const char *auth);
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
