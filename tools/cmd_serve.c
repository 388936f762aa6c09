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
 * one) and hands them to a fixed pool of threads, each serving one
 * connection at a time; the bound address goes to stdout as one line
 * ("http://HOST:PORT"). SIGINT or SIGTERM: stop accepting, let the
 * requests in flight finish (a judge call included), close every session
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
#include <time.h>
#include <unistd.h>

#include "serve_int.h"
#include "tools_int.h"

#define QUEUE_MAX 128

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

typedef struct pool {
  kf_serve *svc;
  size_t max_body;
  bool quiet;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int q[QUEUE_MAX];
  int head, n;
  bool done; /* no more connections come */
} pool;

/* After an error answered without reading the request (a body over the
 * limit): read and drop what the client still sends, for a moment, so
 * that closing with unread bytes does not reset the connection before
 * the client reads the answer. */
static void drain(int fd) {
  if (shutdown(fd, SHUT_WR) != 0) return;
  char tmp[16384];
  double end = kf_now_s() + 2.0;
  size_t total = 0;
  while (kf_now_s() < end && total < ((size_t)64 << 20)) {
    struct pollfd p = {fd, POLLIN, 0};
    int k = poll(&p, 1, 200);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    ssize_t got = recv(fd, tmp, sizeof tmp, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    total += (size_t)got;
  }
}

/* One connection, request after request until it closes, goes idle, or
 * the service stops (then the request in flight is answered first). */
static void serve_conn(pool *P, int fd) {
  kf_http_conn c = {fd, NULL, 0, 0};
  for (;;) {
    kf_http_req q;
    int status = 0;
    const char *why = NULL;
    kf_http_read_result rr = kf_http_read(&c, &q, P->max_body, 15.0, 30.0, &stopping, &status, &why);
    if (rr == KF_HTTP_CLOSED) {
      kf_http_req_fini(&q);
      break;
    }
    if (rr == KF_HTTP_BAD) {
      char *b = kf_serve_error_body(why);
      if (kf_http_send(&c, status, b, false)) drain(fd);
      free(b);
      if (!P->quiet) fprintf(stderr, "kfuse: serve: a bad request: %d %s\n", status, why);
      kf_http_req_fini(&q);
      break;
    }
    double t0 = kf_now_s();
    char *body = NULL;
    int st = kf_serve_handle(P->svc, &q, &body);
    bool keep = q.keep_alive && !stopping;
    bool sent = kf_http_send(&c, st, body, keep);
    if (!P->quiet)
      fprintf(stderr, "kfuse: serve: %s %s %d (%.0f ms)\n", q.method, q.path, st, (kf_now_s() - t0) * 1e3);
    free(body);
    kf_http_req_fini(&q);
    if (!sent || !keep) break;
  }
  free(c.buf);
  close(fd);
}

static void *worker(void *arg) {
  pool *P = arg;
  for (;;) {
    pthread_mutex_lock(&P->mu);
    while (!P->n && !P->done) pthread_cond_wait(&P->cv, &P->mu);
    if (!P->n) { /* done, and nothing left */
      pthread_mutex_unlock(&P->mu);
      return NULL;
    }
    int fd = P->q[P->head];
    P->head = (P->head + 1) % QUEUE_MAX;
    P->n--;
    pthread_mutex_unlock(&P->mu);
    serve_conn(P, fd);
  }
}

/* A connection to the pool, or a 503 when its queue is full. */
static void enqueue(pool *P, int fd) {
  pthread_mutex_lock(&P->mu);
  bool full = P->n == QUEUE_MAX;
  if (!full) {
    P->q[(P->head + P->n) % QUEUE_MAX] = fd;
    P->n++;
    pthread_cond_signal(&P->cv);
  }
  pthread_mutex_unlock(&P->mu);
  if (full) {
    kf_http_conn c = {fd, NULL, 0, 0};
    char *b = kf_serve_error_body("the service is overloaded; retry later");
    kf_http_send(&c, 503, b, false);
    free(b);
    close(fd);
  }
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

int kf_cmd_serve(int argc, char **argv, kf_diag *diag) {
  kf_serve_options o;
  memset(&o, 0, sizeof o);
  o.gpus = 1;
  o.max_sessions = 8;
  o.idle_s = 600;
  o.max_judge = 10;
  o.max_calls = 200;
  kf_judge_options_init(&o.judge);
  const char *listen_at = "127.0.0.1:8470", *token_env = NULL, *v;
  long long max_body = 8 << 20, threads = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    long long n;
    if (kf_cli_is_help(a)) {
      kf_cli_usage(stdout, "serve");
      return 0;
    } else if (strcmp(a, "--tasks") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &o.tasks_dir, diag)) return 2;
    } else if (strcmp(a, "-o") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &o.out_dir, diag)) return 2;
    } else if (strcmp(a, "--listen") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &listen_at, diag)) return 2;
    } else if (strcmp(a, "--token-env") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &token_env, diag)) return 2;
    } else if (strcmp(a, "--gpus") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &v, diag) || !kf_cli_int("serve", a, v, 1, 64, &n, diag)) return 2;
      o.gpus = (int)n;
    } else if (strcmp(a, "--max-sessions") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &v, diag) || !kf_cli_int("serve", a, v, 1, 4096, &n, diag))
        return 2;
      o.max_sessions = (int)n;
    } else if (strcmp(a, "--threads") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &v, diag) || !kf_cli_int("serve", a, v, 1, 1024, &threads, diag))
        return 2;
    } else if (strcmp(a, "--idle-timeout") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &v, diag) || !kf_cli_double("serve", a, v, 1, 1e7, &o.idle_s, diag))
        return 2;
    } else if (strcmp(a, "--max-judge") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &v, diag) || !kf_cli_int("serve", a, v, 0, 100000, &n, diag))
        return 2;
      o.max_judge = (int)n;
    } else if (strcmp(a, "--max-calls") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &v, diag) || !kf_cli_int("serve", a, v, 0, 1000000, &n, diag))
        return 2;
      o.max_calls = (int)n;
    } else if (strcmp(a, "--max-body") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &v, diag) ||
          !kf_cli_int("serve", a, v, 1024, (long long)1 << 30, &max_body, diag))
        return 2;
    } else if (strcmp(a, "--judge-timeout") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &v, diag) ||
          !kf_cli_double("serve", a, v, 1, 86400, &o.judge.timeout_s, diag))
        return 2;
    } else if (strcmp(a, "--sets") == 0) {
      if (!kf_cli_value(argc, argv, &i, "serve", &v, diag) || !kf_cli_int("serve", a, v, 5, 1000, &n, diag)) return 2;
      o.judge.sets = (int)n;
    } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
      o.quiet = true;
    } else if (a[0] == '-' && a[1]) {
      return kf_cli_unknown("serve", a, diag);
    } else {
      return kf_cli_error("serve", diag, "takes no positional argument ('%s'); --tasks DIR names the tasks", a);
    }
  }
  if (!o.tasks_dir || !o.out_dir) return kf_cli_error("serve", diag, "--tasks DIR and -o OUT_DIR are needed");
  if (token_env) {
    o.token = getenv(token_env);
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
  double last_reap = kf_now_s();
  while (!rc && !stopping) {
    struct pollfd fds[2] = {{lfd, POLLIN, 0}, {pp[0], POLLIN, 0}};
    int k = poll(fds, 2, 1000);
    if (k < 0 && errno != EINTR) {
      kf_diag_error(diag, "serve: poll: %s", strerror(errno));
      rc = 1;
      break;
    }
    if (kf_now_s() - last_reap >= 1) {
      kf_serve_reap(svc);
      last_reap = kf_now_s();
    }
    if (k <= 0 || !(fds[0].revents & POLLIN) || stopping) continue;
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED)
        kf_diag_warn(diag, "serve: accept: %s", strerror(errno));
      if (errno == EMFILE || errno == ENFILE) usleep(100000);
      continue;
    }
    enqueue(&P, fd);
  }
  /* stop: no new connections; those the kernel already took are served
   * (their clients sent before the stop), the requests in flight finish */
  if (!rc && fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK) == 0) {
    int fd;
    while ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0 || errno == EINTR || errno == ECONNABORTED)
      if (fd >= 0) enqueue(&P, fd);
  }
  close(lfd);
  if (!o.quiet) fprintf(stderr, "kfuse: serve: stopping: finishing the requests in flight\n");
  pthread_mutex_lock(&P.mu);
  P.done = true;
  stopping = 1;
  pthread_cond_broadcast(&P.cv);
  pthread_mutex_unlock(&P.mu);
  for (int i = 0; i < started; i++) pthread_join(tids[i], NULL);
  free(tids);
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
