/* judge/worker.c — the judge's worker process.
 *
 * kf_jproc_run forks; the child is the worker: its own process group, its
 * own CUDA context (the judging process never makes one, so the fork
 * inherits none), stdin from /dev/null, stdout and stderr (where the
 * driver prints device printf) into a pipe the parent counts, no core
 * files, and SIGKILL when the parent dies. It runs kf_jgpu_run, which
 * writes its report whole down a second pipe after each stage; the parent
 * keeps the last whole one, so a worker that dies half-way still leaves
 * what it finished (the baseline, when the candidate kills it).
 *
 * The parent kills the worker's process group when it
 *   - runs past the wall-time limit (a kernel that never ends: killing the
 *     process is what frees the GPU from it),
 *   - prints more than the output limit (a printf flood),
 * and reports a worker that exits without a whole report (a crash, a
 * signal) with its exit status. The fork shares the parent's memory, so
 * the inputs and the references (large) are not copied through a pipe.
 * A worker serves one judge call: CUDA's start-up (about 0.2 s) is paid per
 * call; reusing healthy workers across calls is not built yet. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "judge_int.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void child(const kf_jwork *w, int rep_fd, int out_fd, pid_t parent) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(3); /* the parent is already gone */
  struct rlimit rl = {0, 0};
  setrlimit(RLIMIT_CORE, &rl);
  int dn = open("/dev/null", O_RDONLY);
  if (dn >= 0) dup2(dn, 0);
  dup2(out_fd, 1);
  dup2(out_fd, 2);
  kf_jreport_fd = rep_fd;
  kf_jreport r;
  kf_jgpu_run(w, &r);
  fflush(stdout);
  fflush(stderr);
  _exit(0);
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
  double t0 = now_s();
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    kf_diag_error(diag, "judge: cannot start the worker: fork: %s", strerror(errno));
    close(rp[0]);
    close(rp[1]);
    close(op[0]);
    close(op[1]);
    return KF_ERR_INTERNAL;
  }
  if (pid == 0) {
    close(rp[0]);
    close(op[0]);
    child(w, rp[1], op[1], parent);
  }
  setpgid(pid, pid); /* also done by the child: whichever runs first */
  close(rp[1]);
  close(op[1]);

  char *buf = malloc(sizeof *r);
  size_t have = 0;
  bool rep_open = true, out_open = true, killed = false;
  double deadline = t0 + w->opt->timeout_s;
  while ((rep_open || out_open) && buf) {
    double left = deadline - now_s();
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
    if (wp == 0 && now_s() > deadline) {
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
  p->wall_s = now_s() - t0;
  if (WIFEXITED(status)) p->exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status) && !(killed && WTERMSIG(status) == SIGKILL && (p->timed_out || p->flooded)))
    p->signal = WTERMSIG(status);
  return KF_OK;
}
