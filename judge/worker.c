/* judge/worker.c — the judge's worker process.
 *
 * kf_jproc_run writes the work (the task's values, the units with their
 * cubins, every input set and its reference) into an anonymous memory
 * file, then forks and execs a fresh worker image: the kfuse binary
 * (/proc/self/exe, or kf_judge_options.worker_exe for other programs)
 * with the hidden command `judge-worker`, which maps the work and runs
 * kf_jgpu_run. The exec is not optional: once a process has compiled with
 * NVRTC (CUDA 13), cuInit in a child it forks fails with
 * CUDA_ERROR_NOT_INITIALIZED (measured on the H100 machine, 2026-11-25,
 * .kb probe: plain fork 0, after nvrtcCompileProgram 3), and the judging
 * process always has. A fresh image also inherits no threads or locks.
 *
 * The wall-time limit is per stage: opening the device, the GPU
 * reference, then each unit (a worker judging six candidates of a large
 * group may take minutes in all, none of them stuck). The worker: its own
 * process group, stdin /dev/null, stdout and stderr
 * (where the driver prints device printf) into a pipe the parent counts,
 * the report pipe on fd 3, the work on fd 4, no core files, SIGKILL when
 * the parent dies. kf_jgpu_run writes its report whole after each stage;
 * the parent keeps the last whole one, so a worker that dies half-way
 * still leaves what it finished (the baseline, when the candidate kills
 * it). The parent kills the worker's process group when it
 *   - runs past the wall-time limit (a kernel that never ends: killing the
 *     process is what frees the GPU from it),
 *   - prints more than the output limit (a printf flood),
 * and reports a worker that exits without a whole report (a crash, a
 * signal) with its exit status. A worker serves one judge call: CUDA's
 * start-up (about 0.2 s) is paid per call; reusing healthy workers across
 * calls is not built yet.
 *
 * kf_jcompile runs NVRTC the same way (`kfuse judge-compile`), under the
 * same timeout. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "judge_int.h"

/* ---- the work, in a memory file ----
 * every item padded to 8 bytes: header, the task's values (kf_jvalue,
 * raw: the same binary reads them),
 * per unit slot (the candidate, the built-in unit, the GPU reference) its
 * JSON, source, cubin and plan (lengths first; JSON length 0 for an empty
 * slot; plan length 0 without library steps), then per input variant every input's extent and
 * every output's reference. */

#define WORK_MAGIC 0x6b66776bu
#define REPORT_FD 3
#define WORK_FD 4

typedef struct work_hdr {
  uint32_t magic, size_check;
  int32_t n_in, n_out, n_sets, precision, has_conv, sm, arch_specific, n_units;
  double min_time_ms;
  int32_t device, profile_unit; /* kf_jwork's; -1: none */
  int32_t sanitize, pad;        /* kf_jwork's */
} work_hdr;

/* Every item starts 8-byte aligned (the reader uses the mapping in place:
 * references are doubles, lengths uint64) */
typedef struct wr {
  int fd;
  uint64_t off;
} wr;

static bool put(wr *w, const void *p, size_t n) {
  static const char zeros[8];
  const char *c = p;
  size_t pad = (size_t)(-n & 7);
  while (n) {
    ssize_t k = write(w->fd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    c += k;
    n -= (size_t)k;
    w->off += (uint64_t)k;
  }
  while (pad) {
    ssize_t k = write(w->fd, zeros, pad);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    pad -= (size_t)k;
    w->off += (uint64_t)k;
  }
  return true;
}

static bool put_blob(wr *w, const void *p, uint64_t n) { return put(w, &n, sizeof n) && (!n || put(w, p, n)); }

static kf_status work_write(int fd, const kf_jwork *w, kf_diag *diag) {
  const kf_jtask *t = w->task;
  wr out = {fd, 0}, *o = &out;
  work_hdr h = {WORK_MAGIC, (uint32_t)sizeof(kf_jvalue), t->n_in, t->n_out, w->n_sets, (int32_t)t->precision,
                t->has_conv, t->target.sm, t->target.arch_specific, w->n_units, w->opt->min_time_ms,
                w->opt->device, w->profile_unit, w->sanitize, 0};
  bool ok = put(o, &h, sizeof h) && put(o, t->in, sizeof *t->in * (size_t)t->n_in) &&
            put(o, t->out, sizeof *t->out * (size_t)t->n_out);
  for (int k = 0; ok && k <= w->n_units; k++) { /* the units, then the GPU reference */
    const kf_unit *u = k < w->n_units ? w->units[k] : w->ref_unit;
    const void *plan = k < w->n_units ? w->plans[k] : w->ref_plan;
    size_t pb = k < w->n_units ? w->plan_bytes[k] : w->ref_plan_bytes;
    if (!u) {
      ok = put_blob(o, NULL, 0);
      continue;
    }
    kf_strbuf js;
    kf_strbuf_init(&js);
    if (kf_unit_to_json(u, u->source ? "unit.cu" : NULL, &js, diag) != KF_OK || js.failed) {
      kf_strbuf_fini(&js);
      return KF_ERR_INTERNAL;
    }
    ok = put_blob(o, js.data, js.len) && put_blob(o, u->source, u->source ? strlen(u->source) : 0) &&
         put_blob(o, u->cubin, u->cubin ? u->cubin_bytes : 0) && put_blob(o, plan, pb);
    kf_strbuf_fini(&js);
  }
  for (int v = 0; ok && v < KF_JVARIANTS(w->n_sets); v++) {
    for (int i = 0; ok && i < t->n_in; i++) ok = put(o, w->sets[v].in[i], (size_t)t->in[i].bytes);
    for (int i = 0; ok && !w->ref_unit && i < t->n_out; i++)
      ok = put(o, w->sets[v].ref[i], sizeof(double) * (size_t)t->out[i].numel);
  }
  if (!ok) {
    kf_diag_error(diag, "judge: writing the worker's input: %s", strerror(errno));
    return KF_ERR_IO;
  }
  return KF_OK;
}

typedef struct rdr {
  const char *p;
  size_t left;
} rdr;

/* n bytes, then the writer's padding to 8 */
static const void *take(rdr *r, size_t n) {
  size_t padded = n + (size_t)(-n & 7);
  if (padded < n || padded > r->left) return NULL;
  const void *p = r->p;
  r->p += padded;
  r->left -= padded;
  return p;
}

static const char *take_blob(rdr *r, uint64_t *n) {
  const void *len = take(r, sizeof *n);
  if (!len) return NULL;
  memcpy(n, len, sizeof *n);
  return *n ? take(r, (size_t)*n) : "";
}

static char *dup_n(const char *p, uint64_t n) {
  char *d = malloc((size_t)n + 1);
  if (d) {
    memcpy(d, p, (size_t)n);
    d[n] = 0;
  }
  return d;
}

static void to_log(void *user, kf_diag_level level, const char *msg) {
  if (level == KF_DIAG_ERROR) kf_strbuf_printf(user, "%s\n", msg);
}

static void quiet(void *user, kf_diag_level level, const char *msg) {
  (void)user;
  if (level == KF_DIAG_ERROR) fprintf(stderr, "judge-worker: %s\n", msg);
}

int kf_judge_worker_main(void) {
  struct stat sb;
  if (fstat(WORK_FD, &sb) != 0 || sb.st_size < (off_t)sizeof(work_hdr)) {
    fprintf(stderr, "judge-worker: no work on fd %d (this command is the judge's, not for use by hand)\n", WORK_FD);
    return 2;
  }
  const char *base = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, WORK_FD, 0);
  if (base == MAP_FAILED) {
    fprintf(stderr, "judge-worker: mmap: %s\n", strerror(errno));
    return 2;
  }
  rdr r = {base, (size_t)sb.st_size};
  const work_hdr *h = take(&r, sizeof *h);
  if (!h || h->magic != WORK_MAGIC || h->size_check != sizeof(kf_jvalue) || h->n_in < 0 || h->n_out < 1 ||
      h->n_sets < 1 || h->n_units < 1 || h->n_units > KF_JMAX_UNITS || h->device < 0 || h->profile_unit < -1 ||
      h->profile_unit >= h->n_units || h->sanitize < 0 || h->sanitize > KF_JSAN_RACECHECK) {
    fprintf(stderr, "judge-worker: malformed work\n");
    return 2;
  }
  kf_jtask t;
  memset(&t, 0, sizeof t);
  t.n_in = h->n_in;
  t.n_out = h->n_out;
  t.precision = (kf_precision)h->precision;
  t.has_conv = h->has_conv != 0;
  t.target.sm = h->sm;
  t.target.arch_specific = h->arch_specific;
  t.in = (kf_jvalue *)take(&r, sizeof(kf_jvalue) * (size_t)t.n_in);
  t.out = (kf_jvalue *)take(&r, sizeof(kf_jvalue) * (size_t)t.n_out);
  kf_judge_options o;
  kf_judge_options_init(&o);
  o.min_time_ms = h->min_time_ms;
  o.device = h->device;
  kf_jwork w;
  memset(&w, 0, sizeof w);
  w.task = &t;
  w.opt = &o;
  w.n_units = h->n_units;
  w.profile_unit = h->profile_unit;
  w.n_sets = h->n_sets;
  w.sanitize = h->sanitize;
  /* after the units, the GPU reference */
  kf_unit *units[KF_JMAX_UNITS + 1] = {NULL};
  const void *plans[KF_JMAX_UNITS + 1] = {NULL};
  size_t plan_bytes[KF_JMAX_UNITS + 1] = {0};
  const int nu = h->n_units;
  kf_diag d;
  kf_diag_init(&d, quiet, NULL);
  bool ok = (t.n_in == 0 || t.in) && t.out;
  for (int k = 0; ok && k <= nu; k++) {
    uint64_t nj = 0, ns = 0, nc = 0;
    const char *js = take_blob(&r, &nj);
    if (!js) ok = false;
    if (!ok || !nj) continue;
    uint64_t np = 0;
    const char *src = take_blob(&r, &ns), *cubin = src ? take_blob(&r, &nc) : NULL;
    const char *plan = cubin ? take_blob(&r, &np) : NULL;
    char *jd = dup_n(js, nj), *sd = src && ns ? dup_n(src, ns) : NULL;
    ok = plan && jd && kf_unit_from_json(jd, "unit.json", sd, &units[k], &d) == KF_OK;
    if (ok && np) {
      /* the runtime wants its plan 8-byte aligned; the mapping's offset may
       * not be */
      void *pa = malloc((size_t)np);
      ok = pa != NULL;
      if (ok) memcpy(pa, plan, (size_t)np);
      plans[k] = pa;
      plan_bytes[k] = (size_t)np;
    }
    free(jd);
    free(sd);
    if (ok && nc) {
      units[k]->cubin = malloc((size_t)nc);
      ok = units[k]->cubin != NULL;
      if (ok) memcpy(units[k]->cubin, cubin, (size_t)nc);
      units[k]->cubin_bytes = (size_t)nc;
    }
  }
  for (int k = 0; k < nu; k++) {
    w.units[k] = units[k];
    w.plans[k] = plans[k];
    w.plan_bytes[k] = plan_bytes[k];
  }
  w.ref_unit = units[nu];
  w.ref_plan = plans[nu];
  w.ref_plan_bytes = plan_bytes[nu];
  kf_jset *sets = calloc((size_t)KF_JVARIANTS(h->n_sets), sizeof *sets);
  ok = ok && sets;
  for (int v = 0; ok && v < KF_JVARIANTS(h->n_sets); v++) {
    sets[v].in = calloc((size_t)t.n_in + 1, sizeof *sets[v].in);
    sets[v].ref = calloc((size_t)t.n_out + 1, sizeof *sets[v].ref);
    ok = sets[v].in && sets[v].ref;
    for (int i = 0; ok && i < t.n_in; i++) ok = (sets[v].in[i] = (void *)take(&r, (size_t)t.in[i].bytes)) != NULL || !t.in[i].bytes;
    for (int i = 0; ok && i < t.n_out; i++) {
      size_t rb = sizeof(double) * (size_t)(t.out[i].numel ? t.out[i].numel : 1);
      if (w.ref_unit) /* the worker makes them */
        ok = (sets[v].ref[i] = malloc(rb)) != NULL;
      else
        ok = (sets[v].ref[i] = (double *)take(&r, sizeof(double) * (size_t)t.out[i].numel)) != NULL || !t.out[i].numel;
    }
  }
  int rc = 2;
  if (!ok) {
    fprintf(stderr, "judge-worker: malformed work\n");
    goto done;
  }
  w.sets = sets;
  kf_jreport_fd = REPORT_FD;
  kf_jreport rep;
  kf_jgpu_run(&w, &rep);
  fflush(stdout);
  fflush(stderr);
  rc = 0;
done:
  for (int v = 0; sets && v < KF_JVARIANTS(h->n_sets); v++) {
    for (int i = 0; w.ref_unit && sets[v].ref && i < t.n_out; i++) free(sets[v].ref[i]);
    free(sets[v].in);
    free(sets[v].ref);
  }
  free(sets);
  for (int k = 0; k <= nu; k++) {
    kf_unit_destroy(units[k]);
    free((void *)plans[k]);
  }
  munmap((void *)base, (size_t)sb.st_size);
  return rc;
}

/* The environment a worker starts with: the judging process's, less
 * anything that is not for CUDA, the toolkit, the loader or kfuse itself.
 * A worker runs a unit's code (NVRTC on its source, its kernels) and
 * inherits no API key, serve token or other secret: kept are PATH,
 * LD_LIBRARY_PATH, TMPDIR, LANG, LC_*, TZ, CUDA_*, NVIDIA_*, the
 * sanitizers' *SAN_OPTIONS, the test fakes' FAKE_CUDA_* and FAKE_CUDNN_*,
 * and KFUSE_* unless its name says KEY, TOKEN, SECRET, PASS or BEARER.
 * Made before each fork (the child may only exec; NULL when out of memory,
 * and the worker is then not started). */
extern char **environ;

static bool env_kept(const char *kv) {
  static const char *const exact[] = {"PATH=", "LD_LIBRARY_PATH=", "TMPDIR=", "LANG=", "TZ="};
  static const char *const prefix[] = {"LC_", "CUDA_", "NVIDIA_", "FAKE_CUDA_", "FAKE_CUDNN_", "KFUSE_"};
  for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
    if (strncmp(kv, exact[i], strlen(exact[i])) == 0) return true;
  const char *eq = strchr(kv, '=');
  if (!eq) return false;
  size_t nl = (size_t)(eq - kv);
  if (nl > 11 && strncmp(eq - 8, "_OPTIONS", 8) == 0 && strncmp(eq - 11, "SAN", 3) == 0) return true;
  for (size_t i = 0; i < sizeof prefix / sizeof prefix[0]; i++) {
    if (strncmp(kv, prefix[i], strlen(prefix[i])) != 0) continue;
    if (strcmp(prefix[i], "KFUSE_") != 0) return true;
    static const char *const secret[] = {"KEY", "TOKEN", "SECRET", "PASS", "BEARER"};
    for (size_t k = 0; k < sizeof secret / sizeof secret[0]; k++) {
      size_t sl = strlen(secret[k]);
      for (size_t j = 0; j + sl <= nl; j++)
        if (strncmp(kv + j, secret[k], sl) == 0) return false;
    }
    return true;
  }
  return false;
}

char **kf_jworker_env(void) {
  size_t n = 0;
  for (char **e = environ; e && *e; e++) n++;
  char **env = calloc(n + 1, sizeof *env);
  if (!env) return NULL;
  size_t k = 0;
  for (char **e = environ; e && *e; e++)
    if (env_kept(*e)) env[k++] = *e; /* borrowed from environ until the exec */
  return env;
}

/* In the forked child: its own process group, death with the parent, no
 * core files, stdin /dev/null, stdout and stderr to out_fd, the report pipe
 * on fd 3, the work on fd 4, then `kfuse CMD` from exe (this process's
 * image when NULL) with kf_jworker_env's environment, or, with san_argv
 * (its program and options, a slot for exe and one for cmd, then NULL),
 * the tool running it. Only async-signal-safe calls until the exec. */
static void spawn_child(const char *exe, const char *cmd, pid_t parent, int out_fd, int rep_fd, int work_fd,
                        char **env, char **san_argv) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(3); /* the parent is already gone */
  struct rlimit rl = {0, 0};
  setrlimit(RLIMIT_CORE, &rl);
  int dn = open("/dev/null", O_RDWR);
  if (dn < 0) _exit(4);
  /* out of the way first: a source may sit on a target's number */
  int o = fcntl(out_fd >= 0 ? out_fd : dn, F_DUPFD, 10), r = fcntl(rep_fd, F_DUPFD, 10),
      w = fcntl(work_fd, F_DUPFD, 10), n = fcntl(dn, F_DUPFD, 10);
  if (o < 0 || r < 0 || w < 0 || n < 0 || dup2(n, 0) < 0 || dup2(o, 1) < 0 || dup2(o, 2) < 0 || dup2(r, REPORT_FD) < 0 ||
      dup2(w, WORK_FD) < 0)
    _exit(4);
  char *const argv[] = {"kfuse", (char *)cmd, NULL};
  if (san_argv) execve(san_argv[0], san_argv, env);
  else execve(exe ? exe : "/proc/self/exe", argv, env);
  static const char msg[] = "judge: cannot start the worker image\n";
  if (write(2, msg, sizeof msg - 1) < 0) _exit(5);
  _exit(5);
}

/* The command line of a worker under compute-sanitizer (w->sanitize):
 * the tool, its options, then this image by its path in self (the tool's
 * own /proc/self/exe would be the tool) and the worker's command; argv
 * has room for 16. False when this program cannot be named. */
static bool san_args(const kf_jwork *w, char *self, size_t n, char **argv) {
  const char *exe = w->opt->worker_exe;
  if (!exe) {
    ssize_t k = readlink("/proc/self/exe", self, n - 1);
    self[k > 0 ? k : 0] = '\0';
    exe = self;
  }
  int a = 0;
  argv[a++] = (char *)w->sanitizer;
  argv[a++] = "--tool";
  argv[a++] = w->sanitize == KF_JSAN_RACECHECK ? "racecheck" : "memcheck";
  argv[a++] = "--error-exitcode";
  argv[a++] = "86"; /* KF_JSAN_EXIT */
  argv[a++] = "--print-limit";
  argv[a++] = "8";
  argv[a++] = "--show-backtrace"; /* no host frames: no host paths */
  argv[a++] = "no";
  if (w->sanitize == KF_JSAN_RACECHECK) {
    argv[a++] = "--racecheck-report";
    argv[a++] = "analysis"; /* "hazard" records every hazard: a racy unit of 2M
                               elements ran past 120 s; the analysis, 17 s */
  }
  argv[a++] = (char *)exe;
  argv[a++] = "judge-worker";
  argv[a] = NULL;
  return exe[0] != '\0';
}

kf_status kf_jproc_run(const kf_jwork *w, kf_jreport *r, kf_jproc *p, kf_diag *diag) {
  memset(p, 0, sizeof *p);
  memset(r, 0, sizeof *r);
  p->exit_code = -1;
  int rp[2], op[2];
  if (pipe2(rp, O_CLOEXEC) != 0) {
    kf_diag_error(diag, "judge: pipe: %s", strerror(errno));
    return KF_ERR_INTERNAL;
  }
  if (pipe2(op, O_CLOEXEC) != 0) {
    kf_diag_error(diag, "judge: pipe: %s", strerror(errno));
    close(rp[0]);
    close(rp[1]);
    return KF_ERR_INTERNAL;
  }
  fflush(stdout);
  fflush(stderr);
  double t0 = kf_now_s();
  if (secure_getenv("KFUSE_JUDGE_NO_WORKER")) {
    /* debugging the judge itself: everything in this process, no limits
     * (kfuse serve refuses to start with it); said once a process */
    static int warned;
    if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
      kf_diag_warn(diag, "judge: KFUSE_JUDGE_NO_WORKER is set: units run inside this process, without the "
                         "worker's isolation, time limit or output limit (for debugging the judge only)");
    close(rp[0]);
    close(rp[1]);
    close(op[0]);
    close(op[1]);
    kf_jgpu_run(w, r);
    p->reported = true;
    p->exit_code = 0;
    p->wall_s = kf_now_s() - t0;
    return KF_OK;
  }
  int mfd = memfd_create("kfuse-judge-work", MFD_CLOEXEC);
  kf_status st = mfd < 0 ? KF_ERR_INTERNAL : work_write(mfd, w, diag);
  if (mfd < 0) kf_diag_error(diag, "judge: memfd_create: %s", strerror(errno));
  char **env = kf_jworker_env();
  if (!env && !st) {
    kf_diag_error(diag, "judge: cannot start the worker: out of memory");
    st = KF_ERR_NOMEM;
  }
  char self[4096], *san_argv[16] = {NULL};
  if (!st && w->sanitize && !san_args(w, self, sizeof self, san_argv)) {
    kf_diag_error(diag, "judge: cannot name this program for compute-sanitizer: readlink: %s", strerror(errno));
    st = KF_ERR_INTERNAL;
  }
  pid_t parent = getpid(), pid = st ? -1 : fork();
  if (pid == 0)
    spawn_child(w->opt->worker_exe, "judge-worker", parent, op[1], rp[1], mfd, env, w->sanitize ? san_argv : NULL);
  free(env); /* the child has exec'd or exited */
  if (pid < 0) {
    if (!st) kf_diag_error(diag, "judge: cannot start the worker: fork: %s", strerror(errno));
    close(rp[0]);
    close(rp[1]);
    close(op[0]);
    close(op[1]);
    if (mfd >= 0) close(mfd);
    return st ? st : KF_ERR_INTERNAL;
  }
  close(mfd);
  setpgid(pid, pid); /* also done by the child: whichever runs first */
  close(rp[1]);
  close(op[1]);

  char *buf = malloc(sizeof *r);
  size_t have = 0;
  bool rep_open = true, out_open = true, killed = false;
  double deadline = t0 + w->opt->timeout_s;
  while ((rep_open || out_open) && buf) {
    double left = deadline - kf_now_s();
    if (left <= 0) {
      p->timed_out = true;
      break;
    }
    struct pollfd fds[2] = {{rp[0], POLLIN, 0}, {op[0], POLLIN, 0}};
    int ms = left > 1 ? 1000 : (int)(left * 1000) + 1;
    int k = poll(fds, 2, ms);
    if (k < 0 && errno != EINTR) break;
    if (k <= 0) continue;
    if (rep_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t got = read(rp[0], buf + have, sizeof *r - have);
      if (got <= 0) {
        rep_open = false;
      } else {
        have += (size_t)got;
        if (have == sizeof *r) {
          memcpy(r, buf, sizeof *r);
          p->reported = r->magic == KF_JREPORT_MAGIC;
          have = 0;
          /* a stage finished (the device opened, the references made, a
           * unit judged): the next one gets the whole limit */
          deadline = kf_now_s() + w->opt->timeout_s;
        }
      }
    }
    if (out_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      char tmp[4096];
      ssize_t got = read(op[0], tmp, sizeof tmp);
      if (got <= 0) {
        out_open = false;
      } else {
        size_t cap = sizeof p->excerpt - 1;
        if ((size_t)p->output_bytes < cap) {
          size_t k2 = cap - (size_t)p->output_bytes;
          memcpy(p->excerpt + p->output_bytes, tmp, k2 < (size_t)got ? k2 : (size_t)got);
        }
        p->output_bytes += got;
        if (p->output_bytes > w->opt->max_output_bytes) {
          p->flooded = true;
          break;
        }
      }
    }
  }
  free(buf);
  if (p->timed_out || p->flooded || rep_open || out_open) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    killed = true;
  }
  int status = 0;
  /* both pipes closed: the worker is exiting; it gets until the deadline */
  for (;;) {
    pid_t wp = waitpid(pid, &status, killed ? 0 : WNOHANG);
    if (wp == pid || (wp < 0 && errno != EINTR)) break;
    if (wp == 0 && kf_now_s() > deadline) {
      p->timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      killed = true;
    } else if (wp == 0) {
      struct timespec ts = {0, 5000000};
      nanosleep(&ts, NULL);
    }
  }
  close(rp[0]);
  close(op[0]);
  p->wall_s = kf_now_s() - t0;
  if (WIFEXITED(status)) p->exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status) && !(killed && WTERMSIG(status) == SIGKILL && (p->timed_out || p->flooded)))
    p->signal = WTERMSIG(status);
  return KF_OK;
}

void kf_jproc_fate(const kf_jproc *p, const kf_judge_options *o, char *b, size_t n) {
  b[0] = '\0';
  if (p->timed_out)
    snprintf(b, n, "the worker ran past the judge's %g s limit and was killed (a kernel that does not end?)",
             o->timeout_s);
  else if (p->flooded)
    snprintf(b, n, "the worker printed more than %lld bytes and was killed (a printf flood)",
             (long long)o->max_output_bytes);
  else if (p->signal)
    snprintf(b, n, "the worker died of signal %d (%s)", p->signal, strsignal(p->signal));
  else if (p->exit_code != 0)
    snprintf(b, n, "the worker exited with status %d", p->exit_code);
  else if (!p->reported)
    snprintf(b, n, "the worker exited without a report");
}

/* Units of w judged again, without those that have a result: sub's
 * slots map to w's through idx */
static void rest_of(const kf_jwork *w, const bool *done, kf_jwork *sub, int *idx) {
  *sub = *w;
  sub->n_units = 0;
  sub->profile_unit = -1;
  for (int k = 0; k < w->n_units; k++) {
    if (!w->units[k] || done[k]) continue;
    int j = sub->n_units++;
    if (k == w->profile_unit) sub->profile_unit = j;
    sub->units[j] = w->units[k];
    sub->plans[j] = w->plans[k];
    sub->plan_bytes[j] = w->plan_bytes[k];
    idx[j] = k;
  }
}

kf_status kf_jjudge_units(const kf_jwork *w, kf_jreport *r, kf_jproc *p, int *workers, kf_diag *diag) {
  bool done[KF_JMAX_UNITS] = {false};
  kf_jreport *one = malloc(sizeof *one);
  if (!one) return KF_ERR_NOMEM;
  memset(r, 0, sizeof *r);
  memset(p, 0, sizeof *p);
  p->exit_code = -1;
  *workers = 0;
  kf_status st = KF_OK;
  /* each round judges at least one unit (or ends), so n_units + 1 rounds
   * are always enough */
  for (int round = 0; round <= w->n_units && !st; round++) {
    kf_jwork sub;
    int idx[KF_JMAX_UNITS];
    rest_of(w, done, &sub, idx);
    if (sub.n_units == 0) break;
    kf_jproc pp;
    st = kf_jproc_run(&sub, one, &pp, diag);
    if (st) break;
    ++*workers;
    if (round == 0) {
      *p = pp;
      *r = *one;
      memset(r->res, 0, sizeof r->res);
    }
    if (!pp.reported || !one->gpu_ok || one->ref_failed || !one->refs_ready) {
      /* nothing judged: no GPU, or no reference; the first worker's
       * report says why */
      if (round > 0) {
        char fate[256];
        kf_jproc_fate(&pp, w->opt, fate, sizeof fate);
        for (int j = 0; j < sub.n_units; j++) {
          kf_jresult *res = &r->res[idx[j]];
          res->ran = 1;
          snprintf(res->reason, sizeof res->reason, "not judged: a fresh worker failed too: %s",
                   pp.reported && (one->ref_failed || !one->gpu_ok) ? one->gpu_error : fate);
        }
      }
      break;
    }
    char fate[256];
    kf_jproc_fate(&pp, w->opt, fate, sizeof fate);
    bool culprit_found = false;
    for (int j = 0; j < sub.n_units; j++) {
      kf_jresult *got = &one->res[j];
      int k = idx[j];
      if (got->skipped) continue; /* the next round */
      if (got->ran) {
        r->res[k] = *got;
        if (got->env_error) r->res[k].env_error = 1;
        done[k] = true;
        continue;
      }
      if (!culprit_found) {
        /* the first unit without a result was running when the worker
         * ended: that fate is its reason */
        culprit_found = true;
        r->res[k].ran = 1;
        snprintf(r->res[k].reason, sizeof r->res[k].reason, "%s",
                 fate[0] ? fate : "the worker ended without judging it");
        done[k] = true;
      }
    }
    if (fate[0] && !culprit_found) {
      /* every unit reported, then the worker met its end (output counted
       * after the last report, a kernel still running at exit): the last
       * unit it judged is failed with it */
      for (int j = sub.n_units - 1; j >= 0; j--) {
        kf_jresult *res = &r->res[idx[j]];
        if (!res->ran || one->res[j].skipped) continue;
        char tmp[KF_JREASON + sizeof fate + 4];
        snprintf(tmp, sizeof tmp, "%s%s(%s)", res->reason, res->reason[0] ? " " : "", fate);
        snprintf(res->reason, sizeof res->reason, "%.*s", (int)sizeof res->reason - 1, tmp);
        res->ok = 0;
        break;
      }
    }
  }
  free(one);
  return st;
}

/* ---- NVRTC in a worker ----
 * A candidate's source is compiled by `kfuse judge-compile`, a fresh image
 * started as the GPU worker is: a source that crashes NVRTC or keeps it
 * busy past the judge's timeout fails that candidate, not the judge. In:
 * header, the unit's name, its source; out (fd 3): status, the log (the
 * diagnostic, with NVRTC's log verbatim, on failure), the cubin. */

#define COMPILE_MAGIC 0x6b666a63u

typedef struct compile_hdr {
  uint32_t magic;
  int32_t sm, arch_specific;
} compile_hdr;

int kf_judge_compile_main(void) {
  struct stat sb;
  if (fstat(WORK_FD, &sb) != 0 || sb.st_size < (off_t)sizeof(compile_hdr)) {
    fprintf(stderr, "judge-compile: no work on fd %d (this command is the judge's, not for use by hand)\n", WORK_FD);
    return 2;
  }
  const char *base = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, WORK_FD, 0);
  if (base == MAP_FAILED) return 2;
  rdr r = {base, (size_t)sb.st_size};
  const compile_hdr *h = take(&r, sizeof *h);
  uint64_t nn = 0, ns = 0;
  const char *name = h && h->magic == COMPILE_MAGIC ? take_blob(&r, &nn) : NULL;
  const char *src = name ? take_blob(&r, &ns) : NULL;
  if (!src) return 2;
  kf_unit *u = calloc(1, sizeof *u); /* kf_unit_destroy frees what it holds */
  if (!u) return 2;
  u->name = dup_n(name, nn);
  u->source = dup_n(src, ns);
  if (!u->name || !u->source) return 2;
  kf_strbuf log;
  kf_strbuf_init(&log);
  kf_diag d;
  kf_diag_init(&d, to_log, &log);
  kf_target tg = {h->sm, h->arch_specific != 0};
  int32_t st = (int32_t)kf_unit_compile(u, &tg, &d);
  const char *text = st ? (log.data ? log.data : "") : (u->compile_log ? u->compile_log : "");
  wr out = {REPORT_FD, 0};
  bool ok = put(&out, &st, sizeof st) && put_blob(&out, text, strlen(text)) &&
            put_blob(&out, u->cubin, st ? 0 : u->cubin_bytes);
  kf_strbuf_fini(&log);
  kf_unit_destroy(u);
  munmap((void *)base, (size_t)sb.st_size);
  return ok ? 0 : 2;
}

kf_status kf_jcompile(kf_unit *u, const kf_target *tg, const kf_judge_options *o, kf_diag *diag) {
  if (!u->source || secure_getenv("KFUSE_JUDGE_NO_WORKER")) return kf_unit_compile(u, tg, diag);
  int rp[2] = {-1, -1};
  int mfd = memfd_create("kfuse-judge-compile", MFD_CLOEXEC);
  if (mfd < 0 || pipe2(rp, O_CLOEXEC) != 0) {
    kf_diag_error(diag, "judge: cannot start the compiler's worker: %s", strerror(errno));
    if (mfd >= 0) close(mfd);
    return KF_ERR_INTERNAL;
  }
  compile_hdr h = {COMPILE_MAGIC, tg->sm, tg->arch_specific};
  wr in = {mfd, 0};
  const char *name = u->name ? u->name : "unit";
  bool ok = put(&in, &h, sizeof h) && put_blob(&in, name, strlen(name)) &&
            put_blob(&in, u->source, strlen(u->source));
  char **env = kf_jworker_env();
  pid_t parent = getpid(), pid = ok && env ? fork() : -1;
  if (pid == 0) spawn_child(o->worker_exe, "judge-compile", parent, -1, rp[1], mfd, env, NULL);
  free(env); /* the child has exec'd or exited */
  close(mfd);
  close(rp[1]);
  if (pid < 0) {
    close(rp[0]);
    kf_diag_error(diag, "judge: cannot start the compiler's worker: %s", strerror(errno));
    return KF_ERR_INTERNAL;
  }
  /* everything it sends, until it closes the pipe or the deadline */
  kf_strbuf got;
  kf_strbuf_init(&got);
  double deadline = kf_now_s() + o->timeout_s;
  bool timed_out = false;
  for (;;) {
    double left = deadline - kf_now_s();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    struct pollfd pf = {rp[0], POLLIN, 0};
    int k = poll(&pf, 1, left > 1 ? 1000 : (int)(left * 1000) + 1);
    if (k < 0 && errno != EINTR) break;
    if (k <= 0) continue;
    char buf[65536];
    ssize_t n = read(rp[0], buf, sizeof buf);
    if (n <= 0) break;
    kf_strbuf_append(&got, buf, (size_t)n);
  }
  close(rp[0]);
  if (timed_out) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  kf_status st = KF_ERR_INVALID;
  rdr r = {got.data ? got.data : "", got.len};
  const int32_t *cs = got.failed ? NULL : take(&r, sizeof *cs);
  uint64_t nl = 0, nc = 0;
  const char *log = cs ? take_blob(&r, &nl) : NULL;
  const char *cubin = log ? take_blob(&r, &nc) : NULL;
  if (timed_out) {
    kf_diag_error(diag, "unit %s: NVRTC did not finish within the judge's %g s and was killed", name, o->timeout_s);
  } else if (!cubin) {
    if (WIFSIGNALED(status))
      kf_diag_error(diag, "unit %s: NVRTC crashed (signal %d, %s)", name, WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
      kf_diag_error(diag, "unit %s: the compiler's worker exited with status %d without a result", name,
                    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  } else if (*cs) {
    kf_diag_error(diag, "%.*s", (int)nl, log);
  } else {
    free(u->cubin);
    free(u->compile_log);
    u->cubin = malloc(nc ? nc : 1);
    u->compile_log = dup_n(log, nl);
    if (u->cubin && u->compile_log) {
      memcpy(u->cubin, cubin, nc);
      u->cubin_bytes = nc;
      st = KF_OK;
    } else {
      st = KF_ERR_NOMEM;
    }
  }
  kf_strbuf_fini(&got);
  return st;
}
