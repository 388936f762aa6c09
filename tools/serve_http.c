/* tools/serve_http.c — the little HTTP/1.1 `kfuse serve` speaks, over POSIX
 * sockets (tools/serve_int.h; docs/AGENT.md, "The rollout service").
 *
 * Requests are a request line, headers (16 KiB together at most) and a
 * body of Content-Length bytes (at most the service's limit; chunked
 * bodies are refused with 411, so no request is ever buffered without a
 * bound). Keep-alive is honoured (HTTP/1.1's default, or "Connection:
 * keep-alive" from 1.0), pipelined bytes are kept for the next request,
 * and "Expect: 100-continue" is answered. Responses are JSON with a
 * Content-Length. Nothing here logs headers: the bearer token passes
 * through in kf_http_req.auth and nowhere else. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "serve_int.h"

#define HEAD_MAX (16 << 10)

void kf_http_req_fini(kf_http_req *r) {
  free(r->auth);
  free(r->body);
  memset(r, 0, sizeof *r);
}

static bool grow(kf_http_conn *c, size_t need) {
  if (c->cap >= need) return true;
  size_t n = c->cap ? c->cap : 4096;
  while (n < need) n *= 2;
  char *b = realloc(c->buf, n);
  if (!b) return false;
  c->buf = b;
  c->cap = n;
  return true;
}

/* Up to want more bytes into c->buf, waiting until deadline (and, while
 * idle, giving up on *stop): 1 read, 0 closed or timed out, -1 error. */
static int fill(kf_http_conn *c, size_t want, double deadline, volatile sig_atomic_t *stop, bool idle) {
  if (!grow(c, c->len + want + 1)) return -1;
  for (;;) {
    double left = deadline - kf_now_s();
    if (left <= 0) return 0;
    struct pollfd p = {c->fd, POLLIN, 0};
    int ms = left > 0.25 ? 250 : (int)(left * 1000) + 1;
    int k = poll(&p, 1, ms);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return -1;
    if (k == 0) {
      if (idle && stop && *stop) return 0; /* what was sent is read first */
      continue;
    }
    ssize_t got = recv(c->fd, c->buf + c->len, want, 0);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) return got == 0 ? 0 : -1;
    c->len += (size_t)got;
    return 1;
  }
}

/* The value of header name in the header block h (lines after the first),
 * copied into v; false when absent. */
static bool header(const char *h, const char *name, char *v, size_t n) {
  size_t nl = strlen(name);
  for (const char *l = strstr(h, "\r\n"); l && l[2]; l = strstr(l + 2, "\r\n")) {
    const char *s = l + 2;
    if (strncasecmp(s, name, nl) != 0 || s[nl] != ':') continue;
    s += nl + 1;
    while (*s == ' ' || *s == '\t') s++;
    const char *e = strstr(s, "\r\n");
    size_t k = e ? (size_t)(e - s) : strlen(s);
    while (k && (s[k - 1] == ' ' || s[k - 1] == '\t')) k--;
    if (k >= n) k = n - 1;
    memcpy(v, s, k);
    v[k] = '\0';
    return true;
  }
  return false;
}

static kf_http_read_result bad(int *status, const char **why, int s, const char *w) {
  *status = s;
  *why = w;
  return KF_HTTP_BAD;
}

kf_http_read_result kf_http_read(kf_http_conn *c, kf_http_req *r, size_t max_body, double idle_s, double read_s,
                                 volatile sig_atomic_t *stop, int *status, const char **why) {
  memset(r, 0, sizeof *r);
  *status = 0;
  *why = NULL;
  /* the head: wait idle for the first byte, then read_s for the rest */
  double deadline = kf_now_s() + idle_s;
  bool started = c->len > 0;
  if (started) deadline = kf_now_s() + read_s;
  char *end = NULL;
  for (;;) {
    if (c->len) {
      c->buf[c->len] = '\0';
      end = strstr(c->buf, "\r\n\r\n");
      if (end) break;
    }
    if (c->len > HEAD_MAX) return bad(status, why, 431, "the request's head is over 16 KiB");
    int k = fill(c, 4096, deadline, stop, !started);
    if (k < 0) return KF_HTTP_CLOSED;
    if (k == 0) return started ? bad(status, why, 408, "the request was not sent in time") : KF_HTTP_CLOSED;
    if (!started) {
      started = true;
      deadline = kf_now_s() + read_s;
    }
  }
  size_t head = (size_t)(end - c->buf) + 4;
  if (head > HEAD_MAX) return bad(status, why, 431, "the request's head is over 16 KiB");
  end[2] = '\0'; /* the head, each line ending in \r\n */
  char version[16] = "";
  char target[1024] = "";
  if (sscanf(c->buf, "%15s %1023s %15s", r->method, target, version) != 3 || strncmp(version, "HTTP/1.", 7) != 0)
    return bad(status, why, 400, "not an HTTP/1.x request line");
  char *q = strchr(target, '?');
  if (q) *q = '\0';
  if (strlen(target) >= sizeof r->path) return bad(status, why, 414, "the path is too long");
  snprintf(r->path, sizeof r->path, "%s", target);
  char v[1024];
  r->keep_alive = strcmp(version, "HTTP/1.1") == 0;
  if (header(c->buf, "Connection", v, sizeof v)) {
    if (strcasecmp(v, "close") == 0) r->keep_alive = false;
    else if (strcasecmp(v, "keep-alive") == 0) r->keep_alive = true;
  }
  if (header(c->buf, "Authorization", v, sizeof v) && !(r->auth = strdup(v))) return KF_HTTP_CLOSED;
  if (header(c->buf, "Transfer-Encoding", v, sizeof v))
    return bad(status, why, 411, "chunked bodies are not accepted: send a Content-Length");
  size_t n = 0;
  if (header(c->buf, "Content-Length", v, sizeof v)) {
    char *e = NULL;
    errno = 0;
    unsigned long long cl = strtoull(v, &e, 10);
    if (e == v || *e || errno || v[0] == '-') return bad(status, why, 400, "the Content-Length is not a number");
    if (cl > max_body) return bad(status, why, 413, "the body is over the service's limit (--max-body)");
    n = (size_t)cl;
  }
  bool expect = header(c->buf, "Expect", v, sizeof v) && strcasecmp(v, "100-continue") == 0;
  /* the head is consumed; what follows is the body, then the next request */
  memmove(c->buf, c->buf + head, c->len - head);
  c->len -= head;
  if (expect && c->len < n) {
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    if (send(c->fd, cont, sizeof cont - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof cont - 1)) return KF_HTTP_CLOSED;
  }
  while (c->len < n) {
    int k = fill(c, n - c->len, deadline, stop, false);
    if (k < 0) return KF_HTTP_CLOSED;
    if (k == 0) return bad(status, why, 408, "the body was not sent in time");
  }
  r->body = malloc(n + 1);
  if (!r->body) return bad(status, why, 500, "out of memory");
  memcpy(r->body, c->buf, n);
  r->body[n] = '\0';
  r->body_len = n;
  memmove(c->buf, c->buf + n, c->len - n);
  c->len -= n;
  return KF_HTTP_GOT;
}

static const char *reason(int s) {
  switch (s) {
  case 200: return "OK";
  case 201: return "Created";
  case 400: return "Bad Request";
  case 401: return "Unauthorized";
  case 404: return "Not Found";
  case 405: return "Method Not Allowed";
  case 408: return "Request Timeout";
  case 409: return "Conflict";
  case 411: return "Length Required";
  case 413: return "Content Too Large";
  case 414: return "URI Too Long";
  case 429: return "Too Many Requests";
  case 431: return "Request Header Fields Too Large";
  case 503: return "Service Unavailable";
  default: return s >= 500 ? "Internal Server Error" : "Error";
  }
}

static bool send_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= (size_t)k;
  }
  return true;
}

bool kf_http_send(kf_http_conn *c, int status, const char *body, bool keep_alive) {
  if (!body) body = "{}";
  size_t n = strlen(body);
  char head[320];
  int k = snprintf(head, sizeof head,
                   "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                   "Cache-Control: no-store\r\n%sConnection: %s\r\n\r\n",
                   status, reason(status), n + 1, status == 401 ? "WWW-Authenticate: Bearer\r\n" : "",
                   keep_alive ? "keep-alive" : "close");
  return k > 0 && (size_t)k < sizeof head && send_all(c->fd, head, (size_t)k) && send_all(c->fd, body, n) &&
         send_all(c->fd, "\n", 1);
}
