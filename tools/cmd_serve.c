/* tools/cmd_serve.c — `kfuse serve`: the kernel environment as an HTTP
 * rollout service for RL trainers (tools/serve.c; docs/AGENT.md, "The
 * rollout service").
 *
 *   kfuse serve --tasks DIR -o OUT_DIR [--listen HOST:PORT] [--gpus N]
 *               [--max-sessions N] [--idle-timeout S] [--max-judge N]
 *               [--max-calls N] [--max-body BYTES] [--threads N]
 *               [--token-env NAME] [--judge-timeout S] [--sets N] [-q]
 *
 * The main thread accepts connections (loopback by default; port 0 picks
 * one) and reads them: it polls every open connection, takes what each
 * has without waiting (tools/serve_http.c) and, once a request is whole,
 * hands it to a fixed pool of threads, which answer it and give the
 * connection back. So an idle or slow client holds a slot in the poll set
 * (at most MAX_CONNS), never a thread: a connection idle for IDLE_S
 * without a request, or whose request is not whole READ_S after its first
 * byte, is closed (a 408 for the latter). The Authorization header is
 * decided as soon as the head is whole, before any body is read: a 401
 * then, like every error the service answers, closes the connection. The
 * bound address goes to stdout as one line ("http://HOST:PORT"). SIGINT
 * or SIGTERM: stop accepting, answer the requests already whole and let
 * those in flight finish (a judge call included), close every session
 * with its result written, exit 0. Exit 1 when it cannot start, 2 on bad
 * usage. The token (--token-env names the variable holding it) is read
 * from the environment and never printed or written. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "serve_int.h"
#include "tools_int.h"

static volatile sig_atomic_t stopping;
static int wake_fd = -1; /* the write end of the self-pipe */

static void on_signal(int sig) {
  (void)sig;
  int e = errno;
  stopping = 1;
  if (wake_fd >= 0 && write(wake_fd, "x", 1) < 0) {
    /* nothing to do: the flag is set and the accept loop polls it */
  }
  errno = e;
}

#define MAX_CONNS 1024 /* open connections, idle or reading */
#define IDLE_S 15.0     /* a connection without a request */
#define READ_S 30.0     /* a request, from its first byte to its last */
#define SEND_S 10.0     /* a response, to a client that does not read */

/* A connection: the poller's while it waits for a whole request, a
 * worker's while that is answered. */
typedef struct conn {
  kf_http_conn c;
  double idle_until;  /* with no request under way */
  double read_until;  /* the request under way: 0 when none */
  double drain_until; /* after an error was answered: drop what comes, then close (0: not) */
  bool continued;     /* "100 Continue" sent for the request under way */
  kf_http_req req;    /* the whole request, for the worker */
  struct conn *next;  /* in the pool's queue or its list of returns */
} conn;

typedef struct pool {
  kf_serve *svc;
  size_t max_body;
  bool quiet;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  conn *q_head, *q_tail; /* whole requests for the workers */
  conn *back;            /* connections the workers give back (keep-alive) */
  int in_flight;         /* connections the workers hold */
  bool done;             /* no more requests come */
} pool;

static void conn_close(conn *k) {
  kf_http_req_fini(&k->req);
  free(k->c.buf);
  close(k->c.fd);
  free(k);
}

static void wake(void) {
  if (wake_fd >= 0 && write(wake_fd, "r", 1) < 0) {
    /* the pipe is full: the poller is being woken anyway */
  }
}

/* A worker: answers one whole request after another; a connection that
 * stays open goes back to the poller, one that does not is closed. */
static void *worker(void *arg) {
  pool *P = arg;
  for (;;) {
    pthread_mutex_lock(&P->mu);
    while (!P->q_head && !P->done) pthread_cond_wait(&P->cv, &P->mu);
    conn *k = P->q_head;
    if (!k) { /* done, and nothing left */
      pthread_mutex_unlock(&P->mu);
      return NULL;
    }
    P->q_head = k->next;
    if (!P->q_head) P->q_tail = NULL;
    k->next = NULL;
    pthread_mutex_unlock(&P->mu);
    double t0 = kf_now_s();
    char *body = NULL;
    int st = kf_serve_handle(P->svc, &k->req, &body);
    /* after an error the connection is closed: a client that sent
     * something wrong starts again on a fresh one */
    bool keep = k->req.keep_alive && !stopping && st < 400;
    bool sent = kf_http_send(&k->c, st, body, keep);
    if (!P->quiet)
      fprintf(stderr, "kfuse: serve: %s %s %d (%.0f ms)\n", k->req.method, k->req.path, st, (kf_now_s() - t0) * 1e3);
    free(body);
    kf_http_req_fini(&k->req);
    if (!sent || !keep) {
      conn_close(k);
      pthread_mutex_lock(&P->mu);
      P->in_flight--;
      pthread_mutex_unlock(&P->mu);
      continue;
    }
    pthread_mutex_lock(&P->mu);
    P->in_flight--;
    k->next = P->back;
    P->back = k;
    pthread_mutex_unlock(&P->mu);
    wake();
  }
}

static void dispatch(pool *P, conn *k) {
  pthread_mutex_lock(&P->mu);
  k->next = NULL;
  if (P->q_tail) P->q_tail->next = k;
  else P->q_head = k;
  P->q_tail = k;
  P->in_flight++;
  pthread_cond_signal(&P->cv);
  pthread_mutex_unlock(&P->mu);
}

/* An error answered by the poller itself: a small response sent without
 * waiting (dropped if the client's window is full), then the connection
 * is shut for writing and what the client still sends is read and dropped
 * for a moment, so that closing with unread bytes does not reset the
 * connection before the client reads the answer. */
static void answer_error(conn *k, int status, const char *why, bool quiet) {
  char *b = kf_serve_error_body(why);
  kf_http_send_now(&k->c, status, b);
  free(b);
  if (!quiet) fprintf(stderr, "kfuse: serve: a bad request: %d %s\n", status, why);
  shutdown(k->c.fd, SHUT_WR);
  k->c.len = 0;
  k->drain_until = kf_now_s() + 2.0;
}

typedef enum { K_KEEP, K_GONE, K_DISPATCHED } conn_fate;

/* What the poller does with a connection that may hold (part of) a
 * request: parse it; a whole one to the workers, a bad or unauthorised
 * one answered here. */
static conn_fate advance(pool *P, conn *k, double now) {
  if (k->drain_until) return K_KEEP;
  int status = 0;
  const char *why = NULL;
  bool expect = false;
  kf_http_parse_result r = kf_http_parse(&k->c, &k->req, P->max_body, &expect, &status, &why);
  if (r == KF_HTTP_MORE) {
    if (k->c.len && !k->read_until) k->read_until = now + READ_S;
    return K_KEEP;
  }
  if (!k->read_until) k->read_until = now + READ_S;
  if (r == KF_HTTP_BAD) {
    answer_error(k, status, why, P->quiet);
    return K_KEEP;
  }
  /* the head is whole: the token decides before the body is read */
  if (!kf_serve_authorised(P->svc, k->req.auth)) {
    answer_error(k, 401, "a bearer token is needed (Authorization: Bearer ...)", P->quiet);
    return K_KEEP;
  }
  if (r == KF_HTTP_HEAD) {
    if (expect && !k->continued) {
      static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
      k->continued = true;
      if (send(k->c.fd, cont, sizeof cont - 1, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)(sizeof cont - 1))
        return K_GONE;
    }
    return K_KEEP;
  }
  k->read_until = 0;
  k->continued = false;
  dispatch(P, k);
  return K_DISPATCHED;
}

/* What came on the wake pipe: signals and connections given back */
static void take_back(pool *P, conn **open, int *n_open, int rfd) {
  char tmp[256];
  while (read(rfd, tmp, sizeof tmp) > 0) {
  }
  pthread_mutex_lock(&P->mu);
  conn *k = P->back;
  P->back = NULL;
  pthread_mutex_unlock(&P->mu);
  double now = kf_now_s();
  while (k) {
    conn *next = k->next;
    k->next = NULL;
    k->idle_until = now + IDLE_S;
    conn_fate f = stopping ? K_GONE : advance(P, k, now); /* pipelined bytes may hold the next request */
    if (f == K_GONE) conn_close(k);
    else if (f == K_KEEP) open[(*n_open)++] = k;
    k = next;
  }
}

/* A new connection, or a 503 when MAX_CONNS are open. */
static void admit(pool *P, int fd, conn **open, int *n_open) {
  struct timeval tv = {(time_t)SEND_S, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  pthread_mutex_lock(&P->mu);
  int in_flight = P->in_flight;
  pthread_mutex_unlock(&P->mu);
  conn *k = *n_open + in_flight < MAX_CONNS ? calloc(1, sizeof *k) : NULL;
  if (!k) {
    char *b = kf_serve_error_body("the service is overloaded; retry later");
    kf_http_conn c = {fd, NULL, 0, 0};
    kf_http_send_now(&c, 503, b);
    free(b);
    close(fd);
    return;
  }
  k->c.fd = fd;
  k->idle_until = kf_now_s() + IDLE_S;
  open[(*n_open)++] = k;
}

/* HOST:PORT ([V6]:PORT) into host and port; false when malformed. */
static bool split_listen(const char *s, char *host, size_t hn, char *port, size_t pn) {
  const char *colon = strrchr(s, ':');
  if (!colon || !colon[1] || strlen(colon + 1) >= pn) return false;
  const char *h = s;
  size_t n = (size_t)(colon - s);
  if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
    h++;
    n -= 2;
  }
  if (!n || n >= hn) return false;
  memcpy(host, h, n);
  host[n] = '\0';
  snprintf(port, pn, "%s", colon + 1);
  for (const char *p = port; *p; p++)
    if (*p < '0' || *p > '9') return false;
  return atol(port) <= 65535;
}

static int open_listener(const char *listen_at, char *bound, size_t bn, bool *loopback, kf_diag *diag) {
  char host[256], port[16];
  if (!split_listen(listen_at, host, sizeof host, port, sizeof port)) {
    kf_diag_error(diag, "serve: --listen '%s': expected HOST:PORT (port 0 picks one)", listen_at);
    return -2;
  }
  struct addrinfo hints, *ai = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  int e = getaddrinfo(host, port, &hints, &ai);
  if (e != 0) {
    kf_diag_error(diag, "serve: --listen %s: %s", listen_at, gai_strerror(e));
    return -1;
  }
  int fd = -1;
  char why[256] = "no address";
  for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      snprintf(why, sizeof why, "socket: %s", strerror(errno));
      continue;
    }
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 || bind(fd, a->ai_addr, a->ai_addrlen) != 0 ||
        listen(fd, 64) != 0) {
      snprintf(why, sizeof why, "%s", strerror(errno));
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(ai);
  if (fd < 0) {
    kf_diag_error(diag, "serve: cannot listen on %s: %s", listen_at, why);
    return -1;
  }
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  char h[INET6_ADDRSTRLEN] = "?";
  int p = 0;
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
    kf_diag_error(diag, "serve: getsockname: %s", strerror(errno));
    close(fd);
    return -1;
  }
  if (ss.ss_family == AF_INET) {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    inet_ntop(AF_INET, &a->sin_addr, h, sizeof h);
    p = ntohs(a->sin_port);
    *loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    snprintf(bound, bn, "http://%s:%d", h, p);
  } else {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    inet_ntop(AF_INET6, &a->sin6_addr, h, sizeof h);
    p = ntohs(a->sin6_port);
    *loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
    snprintf(bound, bn, "http://[%s]:%d", h, p);
  }
  return fd;
}

/* One connection's turn in the poll: what it sent, then its deadlines. */
static conn_fate conn_turn(pool *P, conn *k, short revents, double now) {
  if (revents & (POLLIN | POLLHUP | POLLERR)) {
    bool closed = false;
    if (!kf_http_recv(&k->c, &closed)) closed = true;
    if (k->drain_until) {
      k->c.len = 0; /* dropped */
      if (closed) return K_GONE;
    } else {
      /* a client that sends its request and then shuts its side is
       * answered: what came before the end is a request like any other */
      conn_fate f = advance(P, k, now);
      if (f == K_DISPATCHED) return f;
      if (f == K_GONE || closed) return K_GONE;
    }
  }
  if (k->drain_until) return now < k->drain_until ? K_KEEP : K_GONE;
  if (k->read_until && now >= k->read_until) {
    answer_error(k, 408, "the request was not sent in time", P->quiet);
    return K_KEEP;
  }
  if (k->read_until || k->c.len) return K_KEEP;
  return now < k->idle_until && !stopping ? K_KEEP : K_GONE;
}

static double conn_deadline(const conn *k) {
  return k->drain_until ? k->drain_until : k->read_until ? k->read_until : k->idle_until;
}

/* The poller: accepts, reads every open connection, hands whole requests
 * to the workers, takes connections back; until a signal stops it (then
 * it accepts what the kernel already took and gives the requests under
 * way a second to arrive whole). 0, or 1 on a failure of poll. */
static int serve_loop(pool *P, int lfd, int rfd, kf_diag *diag) {
  conn **open = calloc(MAX_CONNS, sizeof *open);
  struct pollfd *fds = calloc(MAX_CONNS + 2, sizeof *fds);
  conn **polled = calloc(MAX_CONNS, sizeof *polled);
  int n = 0, rc = 0;
  if (!open || !fds || !polled) {
    kf_diag_error(diag, "serve: out of memory");
    rc = 1;
  }
  double last_reap = kf_now_s(), stop_by = 0;
  while (!rc) {
    double now = kf_now_s();
    if (stopping && !stop_by) {
      stop_by = now + 1.0;
      if (fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK) == 0) {
        int fd;
        while ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0 || errno == EINTR || errno == ECONNABORTED)
          if (fd >= 0) admit(P, fd, open, &n);
      }
    }
    if (stop_by && now >= stop_by) break;
    int m = 0;
    fds[m++] = (struct pollfd){rfd, POLLIN, 0};
    if (!stop_by) fds[m++] = (struct pollfd){lfd, POLLIN, 0};
    double next = now + 1.0;
    for (int i = 0; i < n; i++) {
      fds[m + i] = (struct pollfd){open[i]->c.fd, POLLIN, 0};
      polled[i] = open[i];
      double d = conn_deadline(open[i]);
      if (d < next) next = d;
    }
    int polled_n = n;
    int ms = next <= now ? 0 : (int)((next - now) * 1000) + 1;
    int k = poll(fds, (nfds_t)(m + polled_n), ms);
    if (k < 0 && errno != EINTR) {
      kf_diag_error(diag, "serve: poll: %s", strerror(errno));
      rc = 1;
      break;
    }
    now = kf_now_s();
    if (now - last_reap >= 1) {
      kf_serve_reap(P->svc);
      last_reap = now;
    }
    /* each polled connection's turn; those the poller keeps, in order */
    int kept = 0;
    for (int i = 0; i < polled_n; i++) {
      conn *c = polled[i];
      conn_fate f = conn_turn(P, c, k > 0 ? fds[m + i].revents : 0, now);
      if (f == K_GONE) conn_close(c);
      else if (f == K_KEEP) open[kept++] = c;
    }
    n = kept;
    if (k > 0 && (fds[0].revents & POLLIN)) take_back(P, open, &n, rfd);
    if (k > 0 && !stop_by && (fds[1].revents & POLLIN) && !stopping) {
      int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
      if (fd >= 0) {
        admit(P, fd, open, &n);
      } else {
        if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED)
          kf_diag_warn(diag, "serve: accept: %s", strerror(errno));
        if (errno == EMFILE || errno == ENFILE) usleep(100000);
      }
    }
  }
  for (int i = 0; i < n; i++) conn_close(open[i]);
  free(open);
  free(fds);
  free(polled);
  return rc;
}

/* kfuse serve's arguments into o and the rest: -1 to go on, else the exit
 * status (0 after --help, 2 on bad usage). */
static int serve_args(int argc, char **argv, kf_serve_options *o, const char **listen_at, const char **token_env,
                      long long *max_body, long long *threads, kf_diag *diag) {
  const char *v;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    long long n;
    if (kf_cli_is_help(a)) {
      kf_cli_usage(stdout, "serve");
      return 0;
    } else if (strcmp(a, "--tasks") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &o->tasks_dir, diag)) return 2;
    } else if (strcmp(a, "-o") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &o->out_dir, diag)) return 2;
    } else if (strcmp(a, "--listen") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", listen_at, diag)) return 2;
    } else if (strcmp(a, "--token-env") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", token_env, diag)) return 2;
    } else if (strcmp(a, "--gpus") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &v, diag) || !kf_cli_int("serve", a, v, 1, 64, &n, diag)) return 2;
      o->gpus = (int)n;
    } else if (strcmp(a, "--max-sessions") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &v, diag) || !kf_cli_int("serve", a, v, 1, 4096, &n, diag))
        return 2;
      o->max_sessions = (int)n;
    } else if (strcmp(a, "--threads") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &v, diag) || !kf_cli_int("serve", a, v, 1, 1024, threads, diag))
        return 2;
    } else if (strcmp(a, "--idle-timeout") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &v, diag) || !kf_cli_double("serve", a, v, 1, 1e7, &o->idle_s, diag))
        return 2;
    } else if (strcmp(a, "--max-judge") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &v, diag) || !kf_cli_int("serve", a, v, 0, 100000, &n, diag))
        return 2;
      o->max_judge = (int)n;
    } else if (strcmp(a, "--max-calls") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &v, diag) || !kf_cli_int("serve", a, v, 0, 1000000, &n, diag))
        return 2;
      o->max_calls = (int)n;
    } else if (strcmp(a, "--max-body") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &v, diag) ||
          !kf_cli_int("serve", a, v, 1024, (long long)1 << 30, max_body, diag))
        return 2;
    } else if (strcmp(a, "--judge-timeout") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &v, diag) ||
          !kf_cli_double("serve", a, v, 1, 86400, &o->judge.timeout_s, diag))
        return 2;
    } else if (strcmp(a, "--sets") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &v, diag) || !kf_cli_int("serve", a, v, 5, 1000, &n, diag)) return 2;
      o->judge.sets = (int)n;
    } else if (strcmp(a, "--no-sanitize") == 0) {
      o->judge.sanitize = false;
    } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
      o->quiet = true;
    } else if (a[0] == '-' && a[1]) {
      return kf_cli_unknown("serve", a, diag);
    } else {
      return kf_cli_error("serve", diag, "takes no positional argument ('%s'); --tasks DIR names the tasks", a);
    }
  }
  return -1;
}

int kf_cmd_serve(int argc, char **argv, kf_diag *diag) {
  kf_serve_options o;
  memset(&o, 0, sizeof o);
  o.gpus = 1;
  o.max_sessions = 8;
  o.idle_s = 600;
  o.max_judge = 10;
  o.max_calls = 200;
  kf_judge_options_init(&o.judge);
  const char *listen_at = "127.0.0.1:8470", *token_env = NULL;
  long long max_body = 8 << 20, threads = 0;
  int ua = serve_args(argc, argv, &o, &listen_at, &token_env, &max_body, &threads, diag);
  if (ua >= 0) return ua;
  if (!o.tasks_dir || !o.out_dir) return kf_cli_error("serve", diag, "--tasks DIR and -o OUT_DIR are needed");
  if (secure_getenv("KFUSE_JUDGE_NO_WORKER"))
    return kf_cli_error("serve", diag, "KFUSE_JUDGE_NO_WORKER is set: the service runs untrusted kernels only in "
                                       "judge workers; unset it");
  if (token_env) {
    o.token = secure_getenv(token_env);
    if (!o.token || !*o.token)
      return kf_cli_error("serve", diag, "--token-env %s: the variable is not set or empty", token_env);
  }
  if (!threads) threads = o.max_sessions + 4 > 64 ? 64 : o.max_sessions + 4;

  kf_serve *svc = NULL;
  if (kf_serve_create(&o, &svc, diag) != KF_OK) return 1;
  char bound[300];
  bool loopback = false;
  int lfd = open_listener(listen_at, bound, sizeof bound, &loopback, diag);
  if (lfd < 0) {
    kf_serve_destroy(svc);
    return lfd == -2 ? 2 : 1;
  }
  if (!loopback && !o.token)
    kf_diag_warn(diag, "serve: listening on %s without --token-env: anyone who reaches it can run sessions", bound);
  int pp[2];
  if (pipe2(pp, O_CLOEXEC | O_NONBLOCK) != 0) {
    kf_diag_error(diag, "serve: pipe: %s", strerror(errno));
    close(lfd);
    kf_serve_destroy(svc);
    return 1;
  }
  wake_fd = pp[1];
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0) {
    kf_diag_error(diag, "serve: sigaction: %s", strerror(errno));
    close(lfd);
    close(pp[0]);
    close(pp[1]);
    kf_serve_destroy(svc);
    return 1;
  }

  pool P;
  memset(&P, 0, sizeof P);
  P.svc = svc;
  P.max_body = (size_t)max_body;
  P.quiet = o.quiet;
  pthread_mutex_init(&P.mu, NULL);
  pthread_cond_init(&P.cv, NULL);
  pthread_t *tids = calloc((size_t)threads, sizeof *tids);
  int started = 0, rc = 0;
  for (; tids && started < threads; started++) {
    int e = pthread_create(&tids[started], NULL, worker, &P);
    if (e != 0) {
      kf_diag_error(diag, "serve: pthread_create: %s", strerror(e));
      rc = 1;
      break;
    }
  }
  if (!tids) {
    kf_diag_error(diag, "serve: out of memory");
    rc = 1;
  }
  if (!rc) {
    printf("%s\n", bound);
    if (fflush(stdout) != 0) rc = 1;
    if (!o.quiet)
      fprintf(stderr, "kfuse: serve: %s: tasks %s, %d GPU(s), at most %d sessions, %lld threads\n", bound,
              o.tasks_dir, o.gpus, o.max_sessions, threads);
  }
  if (!rc) rc = serve_loop(&P, lfd, pp[0], diag);
  close(lfd);
  if (!o.quiet) fprintf(stderr, "kfuse: serve: stopping: finishing the requests in flight\n");
  pthread_mutex_lock(&P.mu);
  P.done = true;
  stopping = 1;
  pthread_cond_broadcast(&P.cv);
  pthread_mutex_unlock(&P.mu);
  for (int i = 0; i < started; i++) pthread_join(tids[i], NULL);
  free(tids);
  for (conn *k = P.back; k;) { /* given back after the poller stopped */
    conn *next = k->next;
    conn_close(k);
    k = next;
  }
  int left = kf_serve_sessions(svc);
  kf_serve_destroy(svc);
  if (!o.quiet) fprintf(stderr, "kfuse: serve: stopped (%d open session(s) closed)\n", left);
  pthread_mutex_destroy(&P.mu);
  pthread_cond_destroy(&P.cv);
  wake_fd = -1;
  close(pp[0]);
  close(pp[1]);
  return rc;
}
