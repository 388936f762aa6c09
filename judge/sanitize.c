/* judge/sanitize.c — compute-sanitizer over a verified candidate: the
 * judge's worker run again under the tool's memcheck, then its racecheck
 * (judge.c kf_judge_unit, worker.c spawns the tool, gpu.c sanitize_unit
 * runs the unit once on set 1 and once on set 2 in buffers of their exact
 * sizes). The tool sees what the judge's own checks cannot: a read past a
 * buffer within its slack, a shared-memory race that happened to give the
 * right bits, an access to memory the unit was never given. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "judge_int.h"

static bool exec_ok(const char *p) { return p[0] == '/' && access(p, X_OK) == 0; }

bool kf_jsanitizer_find(char *buf, size_t n) {
  const char *e = secure_getenv("KFUSE_COMPUTE_SANITIZER");
  if (e && e[0]) {
    snprintf(buf, n, "%s", e);
    return exec_ok(buf);
  }
  static const char *const homes[] = {"CUDA_HOME", "CUDA_PATH"};
  for (size_t i = 0; i < sizeof homes / sizeof homes[0]; i++) {
    const char *h = secure_getenv(homes[i]);
    if (h && h[0] && (size_t)snprintf(buf, n, "%s/bin/compute-sanitizer", h) < n && exec_ok(buf)) return true;
  }
  if ((size_t)snprintf(buf, n, "/usr/local/cuda/bin/compute-sanitizer") < n && exec_ok(buf)) return true;
  const char *path = secure_getenv("PATH");
  while (path && *path) {
    const char *c = strchr(path, ':');
    size_t len = c ? (size_t)(c - path) : strlen(path);
    if (len && (size_t)snprintf(buf, n, "%.*s/compute-sanitizer", (int)len, path) < n && exec_ok(buf)) return true;
    path = c ? c + 1 : NULL;
  }
  buf[0] = '\0';
  return false;
}

/* The tool's findings from what the worker printed: its "=========" lines
 * but the banner and the summary, joined with " / ", into out[n] */
static void findings(const char *excerpt, char *out, size_t n) {
  size_t k = 0;
  out[0] = '\0';
  for (const char *l = excerpt; l && *l && k + 8 < n;) {
    const char *e = strchr(l, '\n');
    size_t len = e ? (size_t)(e - l) : strlen(l);
    if (len > 9 && strncmp(l, "=========", 9) == 0 && !memmem(l, len, "COMPUTE-SANITIZER", 17) &&
        !memmem(l, len, "ERROR SUMMARY", 13)) {
      const char *s = l + 9;
      size_t sl = len - 9;
      while (sl && *s == ' ') {
        s++;
        sl--;
      }
      int w = snprintf(out + k, n - k, "%s%.*s", k ? " / " : "", (int)sl, s);
      if (w < 0 || (size_t)w >= n - k) break;
      k += (size_t)w;
    }
    l = e ? e + 1 : NULL;
  }
}

kf_status kf_jsanitize(const kf_jwork *w0, const char *tool, int which, char *why, size_t n, bool *clean,
                       bool *errors, kf_diag *diag) {
  *clean = *errors = false;
  why[0] = '\0';
  kf_jwork w = *w0;
  /* the tool slows the unit down (racecheck by orders of magnitude on
   * shared-memory work): four times the stage's limit */
  kf_judge_options o = *w0->opt;
  o.timeout_s *= 4;
  w.opt = &o;
  w.sanitize = which;
  w.sanitizer = tool;
  /* nothing is compared and the worker makes no references under the
   * tool; the GPU reference unit stays in the work all the same, since
   * without one the work would carry the sets' references, which a task
   * judged against the GPU reference has only in its worker */
  w.profile_unit = -1;
  kf_jreport *r = malloc(sizeof *r);
  if (!r) return KF_ERR_NOMEM;
  kf_jproc p;
  kf_status st = kf_jproc_run(&w, r, &p, diag);
  if (st) {
    free(r);
    return st;
  }
  const char *name = which == KF_JSAN_RACECHECK ? "racecheck" : "memcheck";
  char found[KF_JREASON];
  findings(p.excerpt, found, sizeof found);
  const kf_jresult *res = &r->res[w.n_units - 1];
  if (p.exit_code == KF_JSAN_EXIT) {
    *errors = true;
    snprintf(why, n, "compute-sanitizer %s reported errors: %s", name, found[0] ? found : "(no detail printed)");
  } else if (p.timed_out) {
    snprintf(why, n, "compute-sanitizer %s did not finish within the judge's %.0f s: not checked", name,
             w.opt->timeout_s);
  } else if (!p.reported || !r->gpu_ok || p.exit_code != 0) {
    char fate[256];
    kf_jproc_fate(&p, w.opt, fate, sizeof fate);
    snprintf(why, n, "compute-sanitizer %s did not run the unit: %s%s%.300s", name,
             p.reported && !r->gpu_ok ? r->gpu_error : fate, found[0] ? "; it printed: " : "", found);
  } else if (!res->ok) {
    snprintf(why, n, "under compute-sanitizer %s the unit failed: %s", name, res->reason);
  } else {
    *clean = true;
    snprintf(why, n, "compute-sanitizer %s: no errors (%s)", name,
             which == KF_JSAN_RACECHECK ? "set 1, one run" : "sets 1 and 2, one run each");
  }
  free(r);
  return KF_OK;
}
