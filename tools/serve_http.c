/* tools/serve_http.c — the little HTTP/1.1 `kfuse serve` speaks, over POSIX
 * sockets (tools/serve_int.h; docs/AGENT.md, "The rollout service").
 *
 * Requests are a request line, headers (16 KiB together at most) and a
 * body of Content-Length bytes (at most the service's limit; chunked
 * bodies are refused with 411, so no request is ever buffered without a
 * bound). Keep-alive is honoured (HTTP/1.1's default, or "Connection:
 * keep-alive" from 1.0), pipelined bytes are kept for the next request,
 * and "Expect: 100-continue" is answered. Reading never blocks: the
 * service's poller (cmd_serve.c) takes what a socket has (kf_http_recv)
 * and parses what it holds (kf_http_parse), so the Authorization header
 * is decided before the body is read and no thread waits on a client.
 * Responses are JSON with a Content-Length. Nothing here logs headers: the bearer token passes
 * through in kf_http_req.auth and nowhere else. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

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

bool kf_http_recv(kf_http_conn *c, bool *closed) {
  *closed = false;
  for (;;) {
    if (!grow(c, c->len + 16384 + 1)) return false;
    ssize_t got = recv(c->fd, c->buf + c->len, 16384, MSG_DONTWAIT);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (got <= 0) {
      *closed = true;
      return got == 0;
    }
    c->len += (size_t)got;
    if ((size_t)got < 16384) return true;
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

static kf_http_parse_result bad(int *status, const char **why, int s, const char *w) {
  *status = s;
  *why = w;
  return KF_HTTP_BAD;
}

kf_http_parse_result kf_http_parse(kf_http_conn *c, kf_http_req *r, size_t max_body, bool *expect,
                                   int *status, const char **why) {
  kf_http_req_fini(r);
  *status = 0;
  *why = NULL;
  *expect = false;
  if (!c->len) return KF_HTTP_MORE;
  if (!grow(c, c->len + 1)) return bad(status, why, 500, "out of memory");
  c->buf[c->len] = '\0';
  char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
  size_t head = end ? (size_t)(end - c->buf) + 4 : c->len; /* all of it is head until the blank line */
  if (memchr(c->buf, '\0', head > HEAD_MAX ? HEAD_MAX : head))
    return bad(status, why, 400, "a NUL byte in the request's head");
  if (!end) return c->len > HEAD_MAX ? bad(status, why, 431, "the request's head is over 16 KiB") : KF_HTTP_MORE;
  if (head > HEAD_MAX) return bad(status, why, 431, "the request's head is over 16 KiB");
  /* the head, each line ending in \r\n, parsed from a copy (the buffer
   * keeps the request until it is whole) */
  char *h = malloc(head);
  if (!h) return bad(status, why, 500, "out of memory");
  memcpy(h, c->buf, head - 2);
  h[head - 2] = '\0';
  kf_http_parse_result res = KF_HTTP_GOT;
  char version[16] = "";
  char target[1024] = "";
  size_t n = 0;
  char v[1024];
  if (sscanf(h, "%15s %1023s %15s", r->method, target, version) != 3 || strncmp(version, "HTTP/1.", 7) != 0) {
    res = bad(status, why, 400, "not an HTTP/1.x request line");
    goto out;
  }
  char *q = strchr(target, '?');
  if (q) *q = '\0';
  if (strlen(target) >= sizeof r->path) {
    res = bad(status, why, 414, "the path is too long");
    goto out;
  }
  snprintf(r->path, sizeof r->path, "%s", target);
  r->keep_alive = strcmp(version, "HTTP/1.1") == 0;
  if (header(h, "Connection", v, sizeof v)) {
    if (strcasecmp(v, "close") == 0) r->keep_alive = false;
    else if (strcasecmp(v, "keep-alive") == 0) r->keep_alive = true;
  }
  if (header(h, "Authorization", v, sizeof v) && !(r->auth = strdup(v))) {
    res = bad(status, why, 500, "out of memory");
    goto out;
  }
  if (header(h, "Transfer-Encoding", v, sizeof v)) {
    res = bad(status, why, 411, "chunked bodies are not accepted: send a Content-Length");
    goto out;
  }
  if (header(h, "Content-Length", v, sizeof v)) {
    char *e = NULL;
    errno = 0;
    unsigned long long cl = strtoull(v, &e, 10);
    if (e == v || *e || errno || v[0] == '-') {
      res = bad(status, why, 400, "the Content-Length is not a number");
      goto out;
    }
    if (cl > max_body) {
      res = bad(status, why, 413, "the body is over the service's limit (--max-body)");
      goto out;
    }
    n = (size_t)cl;
  }
  *expect = header(h, "Expect", v, sizeof v) && strcasecmp(v, "100-continue") == 0;
  if (c->len - head < n) {
    res = KF_HTTP_HEAD;
    goto out;
  }
  r->body = malloc(n + 1);
  if (!r->body) {
    res = bad(status, why, 500, "out of memory");
    goto out;
  }
  memcpy(r->body, c->buf + head, n);
  r->body[n] = '\0';
  r->body_len = n;
  /* consumed; what follows is the next request */
  memmove(c->buf, c->buf + head + n, c->len - head - n);
  c->len -= head + n;
out:
  free(h);
  return res;
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

static int response_head(char *head, size_t n, int status, size_t body_n, bool keep_alive) {
  return snprintf(head, n,
                  "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                  "Cache-Control: no-store\r\n%sConnection: %s\r\n\r\n",
                  status, reason(status), body_n + 1, status == 401 ? "WWW-Authenticate: Bearer\r\n" : "",
                  keep_alive ? "keep-alive" : "close");
}

bool kf_http_send(kf_http_conn *c, int status, const char *body, bool keep_alive) {
  if (!body) body = "{}";
  size_t n = strlen(body);
  char head[320];
  int k = response_head(head, sizeof head, status, n, keep_alive);
  return k > 0 && (size_t)k < sizeof head && send_all(c->fd, head, (size_t)k) && send_all(c->fd, body, n) &&
         send_all(c->fd, "\n", 1);
}

void kf_http_send_now(kf_http_conn *c, int status, const char *body) {
  if (!body) body = "{}";
  char msg[1024];
  int k = response_head(msg, sizeof msg, status, strlen(body), false);
  if (k <= 0 || (size_t)k >= sizeof msg) return;
  int m = snprintf(msg + k, sizeof msg - (size_t)k, "%s\n", body);
  if (m <= 0 || (size_t)m >= sizeof msg - (size_t)k) return; /* error bodies are short */
  if (send(c->fd, msg, (size_t)(k + m), MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
    /* the client is gone or not reading: it gets the close */
  }
}
