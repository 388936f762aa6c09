/* judge/emu.c — kernel units run on the CPU (include/kfuse/judge.h,
 * kf_emu_*): what kfuse compile's module check does without a GPU, and
 * what the emulator tests (tests/emu/emu_check.c) run.
 *
 * The units' CUDA sources are compiled as host C++ (-DKF_EMU, the CUDA
 * emulation agent/templates/kf_emu.h included first: blocks one after
 * another, a block's threads as coroutines that really wait at every
 * barrier) by $KFUSE_EMU_CXX (default g++), in batches side by side
 * (a batch never holds two kernels of one name; a batch that does not
 * compile is split into one library a unit, so that the unit at fault is
 * named), and loaded with dlopen. Library steps follow the runtime's
 * contracts in double: GEMM steps kfr_gemm's row-major
 * D = alpha A@B (+ beta C) (+ bias, relu/gelu), convolutions kfr_conv's
 * y = act(alpha1 conv(x, w) + alpha2 z + bias) in either layout, copies and
 * zero fills as memcpy and memset. The emulation checks logic (indexing,
 * reductions, epilogues, dtypes, layouts, where values live), not GPU
 * timing or memory-model subtleties beyond barriers. */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "judge_int.h"
#include "kfr_plan.h"
#include "kfuse/interp.h"

extern char **environ;

typedef int (*launch_fn)(const char *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void **, int);

struct kf_emu {
  int n_lib;
  void **lib;
  launch_fn *launch;
  const unsigned **flag;
  int n_units;
  const kf_unit **unit; /* distinct units with source, and the library of each */
  int *lib_of;
};

/* ---- values as doubles ---- */

static double gelu_tanh(double x) { return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }

/* n elements of dtype dt at p as doubles (NULL when out of memory) */
static double *to_f64(kf_dtype dt, const void *p, int64_t n) {
  double *d = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  if (!d) return NULL;
  for (int64_t i = 0; i < n; i++) d[i] = kf_elem_get(dt, p, i);
  return d;
}

/* kfr_gemm's contract, in double: D = alpha op(A) op(B) (+ beta C), then
 * the bias and activation of the epilogue */
static kf_status cpu_gemm(const kf_unit_gemm *q, const void *A, const void *B, const void *C, const void *bias,
                          kf_dtype bias_dt, void *D) {
  int64_t ea = (q->batch - 1) * q->stride_a + (q->trans_a ? (q->k - 1) * q->lda + q->m : (q->m - 1) * q->lda + q->k);
  int64_t eb = (q->batch - 1) * q->stride_b + (q->trans_b ? (q->n - 1) * q->ldb + q->k : (q->k - 1) * q->ldb + q->n);
  if (q->m <= 0 || q->n <= 0 || q->batch <= 0) return KF_OK;
  double *a = q->k > 0 ? to_f64(q->dtype, A, ea) : NULL, *b = q->k > 0 ? to_f64(q->dtype, B, eb) : NULL;
  if (q->k > 0 && (!a || !b)) {
    free(a);
    free(b);
    return KF_ERR_NOMEM;
  }
  for (int64_t bt = 0; bt < q->batch; bt++)
    for (int64_t i = 0; i < q->m; i++)
      for (int64_t j = 0; j < q->n; j++) {
        double acc = 0;
        const double *ap = a ? a + bt * q->stride_a + (q->trans_a ? i : i * q->lda) : NULL;
        const double *bp = b ? b + bt * q->stride_b + (q->trans_b ? j * q->ldb : j) : NULL;
        int64_t sa = q->trans_a ? q->lda : 1, sb = q->trans_b ? 1 : q->ldb;
        for (int64_t k = 0; k < q->k; k++) acc += ap[k * sa] * bp[k * sb];
        double v = q->alpha * acc;
        if (q->has_c && C) v += q->beta * kf_elem_get(q->dtype, C, bt * q->stride_c + i * q->ldc + j);
        if (q->epilogue == KFR_EPI_BIAS || q->epilogue == KFR_EPI_RELU_BIAS || q->epilogue == KFR_EPI_GELU_BIAS)
          v += kf_elem_get(bias_dt, bias, j);
        if (q->epilogue == KFR_EPI_RELU_BIAS || q->epilogue == KFR_EPI_RELU) v = v > 0 ? v : 0;
        if (q->epilogue == KFR_EPI_GELU_BIAS || q->epilogue == KFR_EPI_GELU) v = gelu_tanh(v);
        kf_elem_set(q->dtype, D, bt * q->stride_d + i * q->ldd + j, v);
      }
  free(a);
  free(b);
  return KF_OK;
}

/* kfr_conv's contract, in double: cross-correlation of dense x [n, c,
 * in...] with w [k, c/groups, filter...] into y [n, k, out...] (NHWC
 * layout: x, y, z channels-last, w KRSC), then
 * alpha1 * conv + alpha2 * z + bias and the activation; transposed: x [n,
 * c, in], w [c, k/groups, filter] (KRSC: [c, filter..., k/groups]), y at
 * i*s - p + f*d. Strides by layout, then one output plane accumulated at
 * a time. */
/* The input position output position o reads through filter tap f along
 * spatial dim d, or -1 where there is none (padding; for a transposed
 * convolution, a position between strides). */
static int64_t in_pos(const kf_unit_conv *q, int d, int64_t o, int64_t f) {
  int64_t i;
  if (q->transposed) {
    int64_t t = o + q->pad[d] - f * q->dilation[d];
    if (t < 0 || t % q->stride[d]) return -1;
    i = t / q->stride[d];
  } else {
    i = o * q->stride[d] - q->pad[d] + f * q->dilation[d];
  }
  return i >= 0 && i < q->in[d] ? i : -1;
}

static kf_status cpu_conv(const kf_unit_conv *q, const void *X, const void *W, const void *bias, const void *Z,
                          void *Y) {
  kf_dtype dt = q->dtype;
  bool nhwc = q->layout == KFR_CONV_NHWC;
  int64_t cg = q->c / q->groups, kg = q->k / q->groups;
  const int64_t *I = q->in, *F = q->filter, *O = q->out;
  int64_t isz = I[0] * I[1] * I[2], fsz = F[0] * F[1] * F[2], osz = O[0] * O[1] * O[2];
  /* strides: x [n, c, i0, i1, i2], y [n, k, o0, o1, o2], w [outer, inner, f0, f1, f2] */
  int64_t xs[5], ys[5], ws[5];
  int64_t wo = q->transposed ? q->c : q->k, wi = q->transposed ? kg : cg; /* w's two channel dims */
  if (nhwc) {
    int64_t x5[5] = {isz * q->c, 1, I[1] * I[2] * q->c, I[2] * q->c, q->c};
    int64_t y5[5] = {osz * q->k, 1, O[1] * O[2] * q->k, O[2] * q->k, q->k};
    int64_t w5[5] = {fsz * wi, 1, F[1] * F[2] * wi, F[2] * wi, wi};
    memcpy(xs, x5, sizeof xs);
    memcpy(ys, y5, sizeof ys);
    memcpy(ws, w5, sizeof ws);
  } else {
    int64_t x5[5] = {q->c * isz, isz, I[1] * I[2], I[2], 1};
    int64_t y5[5] = {q->k * osz, osz, O[1] * O[2], O[2], 1};
    int64_t w5[5] = {wi * fsz, fsz, F[1] * F[2], F[2], 1};
    memcpy(xs, x5, sizeof xs);
    memcpy(ys, y5, sizeof ys);
    memcpy(ws, w5, sizeof ws);
  }
  double *x = to_f64(dt, X, q->n * q->c * isz), *w = to_f64(dt, W, wo * wi * fsz);
  double *acc = malloc(sizeof(double) * (size_t)(osz > 0 ? osz : 1));
  kf_status st = KF_OK;
  if (!x || !w || !acc) {
    st = KF_ERR_NOMEM;
    goto done;
  }
  for (int64_t n = 0; n < q->n; n++)
    for (int64_t k = 0; k < q->k; k++) {
      int64_t g = k / kg;
      memset(acc, 0, sizeof(double) * (size_t)osz);
      for (int64_t ci = 0; ci < cg; ci++) {
        int64_t c = g * cg + ci;
        const double *xc = x + n * xs[0] + c * xs[1];
        const double *wk = q->transposed ? w + c * ws[0] + (k % kg) * ws[1] : w + k * ws[0] + ci * ws[1];
        for (int64_t f0 = 0; f0 < F[0]; f0++)
          for (int64_t f1 = 0; f1 < F[1]; f1++)
            for (int64_t f2 = 0; f2 < F[2]; f2++) {
              double wv = wk[f0 * ws[2] + f1 * ws[3] + f2 * ws[4]];
              for (int64_t o0 = 0; o0 < O[0]; o0++) {
                int64_t i0 = in_pos(q, 0, o0, f0);
                if (i0 < 0) continue;
                for (int64_t o1 = 0; o1 < O[1]; o1++) {
                  int64_t i1 = in_pos(q, 1, o1, f1);
                  if (i1 < 0) continue;
                  const double *xr = xc + i0 * xs[2] + i1 * xs[3];
                  double *ar = acc + (o0 * O[1] + o1) * O[2];
                  for (int64_t o2 = 0; o2 < O[2]; o2++) {
                    int64_t i2 = in_pos(q, 2, o2, f2);
                    if (i2 < 0) continue;
                    ar[o2] += wv * xr[i2 * xs[4]];
                  }
                }
              }
            }
      }
      for (int64_t o = 0; o < osz; o++) {
        int64_t o0 = o / (O[1] * O[2]), o1 = o / O[2] % O[1], o2 = o % O[2];
        int64_t yi = n * ys[0] + k * ys[1] + o0 * ys[2] + o1 * ys[3] + o2 * ys[4];
        double v = q->alpha1 * acc[o];
        if (!q->transposed) {
          if (q->has_z) v += q->alpha2 * kf_elem_get(dt, Z, yi);
          if (q->has_bias) v += kf_elem_get(dt, bias, k);
          if (q->activation == KFR_ACT_RELU) v = v > 0 || isnan(v) ? v : 0;
        }
        kf_elem_set(dt, Y, yi, v);
      }
    }
done:
  free(x);
  free(w);
  free(acc);
  return st;
}

/* ---- building ---- */

static bool has_kernel(const kf_unit *u, const char *name) {
  for (int s = 0; s < u->n_steps; s++)
    if (u->steps[s].kind == KF_USTEP_LAUNCH && u->steps[s].kernel && strcmp(u->steps[s].kernel, name) == 0)
      return true;
  return false;
}

/* One batch's host C++: the units' sources and the launcher by kernel name. */
static kf_status write_batch(const char *path, const kf_unit *const *us, int n, kf_diag *diag) {
  FILE *f = fopen(path, "w");
  if (!f) {
    kf_diag_error(diag, "emulation: cannot write %s: %s", path, strerror(errno));
    return KF_ERR_IO;
  }
  /* the index flag's definition even where no unit includes the header */
  fprintf(f, "#include \"kf_common.cuh\"\n");
  for (int i = 0; i < n; i++) fprintf(f, "%s\n", us[i]->source);
  fprintf(f, "extern \"C\" int kf_emu_launch(const char *n, unsigned gx, unsigned gy, unsigned gz,\n"
             "    unsigned bx, unsigned by, unsigned bz, void **a, int na) {\n"
             "  dim3 g, b; g.x = gx; g.y = gy; g.z = gz; b.x = bx; b.y = by; b.z = bz;\n");
  for (int i = 0; i < n; i++)
    for (int s = 0; s < us[i]->n_steps; s++) {
      const kf_unit_step *st = &us[i]->steps[s];
      if (st->kind == KF_USTEP_LAUNCH && st->kernel)
        fprintf(f, "  if (!strcmp(n, \"%s\")) return kf_emu::run(&%s, g, b, a, na);\n", st->kernel, st->kernel);
    }
  fprintf(f, "  return -1;\n}\n");
  if (fclose(f)) {
    kf_diag_error(diag, "emulation: cannot write %s", path);
    return KF_ERR_IO;
  }
  return KF_OK;
}

static pid_t spawn_cxx(const char *dir, const char *cpp, const char *so, const char *log) {
  const char *cxx = secure_getenv("KFUSE_EMU_CXX");
  char cmd[24576];
  snprintf(cmd, sizeof cmd, "exec '%s' -std=c++17 -O1 -shared -fPIC -w -DKF_EMU -include '%s/kf_emu.h' -I '%s' '%s' -o '%s' >'%s' 2>&1",
           cxx && *cxx ? cxx : "g++", dir, dir, cpp, so, log);
  char *argv[] = {(char *)"sh", (char *)"-c", cmd, NULL};
  pid_t pid;
  if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ) != 0) return -1;
  return pid;
}

/* The first line of a compiler log that says "error", else its first line. */
static void first_error(const char *log, char *out, size_t n) {
  FILE *f = fopen(log, "r");
  char line[1024], first[1024] = "";
  out[0] = 0;
  while (f && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    if (!first[0]) snprintf(first, sizeof first, "%s", line);
    if (strstr(line, "error")) {
      snprintf(out, n, "%.*s", (int)(n > 1 ? n - 1 : 0), line);
      break;
    }
  }
  if (f) fclose(f);
  if (!out[0]) snprintf(out, n, "%.*s", (int)(n > 1 ? n - 1 : 0), first[0] ? first : "(no output)");
}

/* Compile batches [from, to) (DIR/emuK.cpp into DIR/emuK.so) side by side,
 * as many at a time as there are cores; ok[k] says which succeeded. KF_OK
 * unless a compiler could not be started. */
static kf_status compile_batches(const char *dir, int from, int to, bool *ok, kf_diag *diag) {
  pid_t *pid = calloc((size_t)to + 1, sizeof *pid);
  if (!pid) return KF_ERR_NOMEM;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int par = ncpu > 0 ? (int)ncpu : 1, next = from, running = 0;
  kf_status st = KF_OK;
  while (next < to || running) {
    while (next < to && running < par && !st) {
      char cpp[4200], so[4200], log[4200];
      snprintf(cpp, sizeof cpp, "%s/emu%d.cpp", dir, next);
      snprintf(so, sizeof so, "%s/emu%d.so", dir, next);
      snprintf(log, sizeof log, "%s/emu%d.log", dir, next);
      pid[next] = spawn_cxx(dir, cpp, so, log);
      if (pid[next] < 0) {
        kf_diag_error(diag, "emulation: cannot start the host compiler: %s", strerror(errno));
        st = KF_ERR_UNSUPPORTED;
        break;
      }
      next++;
      running++;
    }
    if (!running) break;
    /* our own children only (never waitpid(-1): the caller may have others) */
    bool reaped = false;
    for (int k = from; k < next; k++) {
      if (pid[k] <= 0) continue;
      int status = 0;
      pid_t w = waitpid(pid[k], &status, WNOHANG);
      if (w == pid[k] || (w < 0 && errno != EINTR)) {
        ok[k] = w == pid[k] && WIFEXITED(status) && WEXITSTATUS(status) == 0;
        pid[k] = 0;
        running--;
        reaped = true;
      }
    }
    if (!reaped) {
      struct timespec ts = {0, 10 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
  free(pid);
  return st;
}

static kf_status load_lib(kf_emu *e, const char *so, kf_diag *diag) {
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  launch_fn l = h ? (launch_fn)dlsym(h, "kf_emu_launch") : NULL;
  const unsigned *flag = h ? (const unsigned *)dlsym(h, "kf_index_error") : NULL;
  if (!l || !flag) {
    kf_diag_error(diag, "emulation: cannot load %s: %s", so, dlerror());
    if (h) dlclose(h);
    return KF_ERR_INTERNAL;
  }
  e->lib[e->n_lib] = h;
  e->launch[e->n_lib] = l;
  e->flag[e->n_lib] = flag;
  e->n_lib++;
  return KF_OK;
}

/* Batch numbers for the distinct units: up to one batch a core, at least
 * 32 units each (every batch parses the templates and the emulation
 * header again, which costs more than a small unit), no kernel name twice
 * in a batch. Returns the batch count. */
static int plan_batches(const kf_emu *e, int *batch) {
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int want = e->n_units / 32, nb = 0;
  if (ncpu > 0 && want > ncpu) want = (int)ncpu;
  if (want < 1) want = 1;
  for (int k = 0; k < e->n_units; k++) {
    int b = k % want;
    for (;; b++) {
      bool clash = false;
      for (int j = 0; j < k && !clash; j++)
        if (batch[j] == b)
          for (int s = 0; s < e->unit[k]->n_steps && !clash; s++)
            if (e->unit[k]->steps[s].kind == KF_USTEP_LAUNCH && e->unit[k]->steps[s].kernel)
              clash = has_kernel(e->unit[j], e->unit[k]->steps[s].kernel);
      if (!clash) break;
    }
    batch[k] = b;
    if (b + 1 > nb) nb = b + 1;
  }
  return nb;
}

kf_status kf_emu_build(kf_unit *const *units, int n, const char *dir, kf_emu **out, kf_diag *diag) {
  *out = NULL;
  if (strchr(dir, '\'')) {
    kf_diag_error(diag, "emulation: the directory %s has a quote in its name", dir);
    return KF_ERR_ARG;
  }
  kf_emu *e = calloc(1, sizeof *e);
  if (!e) return KF_ERR_NOMEM;
  size_t cap = 2 * (size_t)n + 2; /* batches, then at most one more a unit */
  e->unit = calloc((size_t)n + 1, sizeof *e->unit);
  e->lib_of = calloc((size_t)n + 1, sizeof *e->lib_of);
  e->lib = calloc(cap, sizeof *e->lib);
  e->launch = calloc(cap, sizeof *e->launch);
  e->flag = calloc(cap, sizeof *e->flag);
  int *batch = calloc((size_t)n + 1, sizeof *batch), *lib_at = calloc(cap, sizeof *lib_at);
  bool *ok = calloc(cap, sizeof *ok);
  const kf_unit **bu = calloc((size_t)n + 1, sizeof *bu);
  kf_status st = KF_OK;
  if (!e->unit || !e->lib_of || !e->lib || !e->launch || !e->flag || !batch || !lib_at || !ok || !bu) {
    st = KF_ERR_NOMEM;
    goto done;
  }
  for (int i = 0; i < n; i++) {
    if (!units[i] || !units[i]->source) continue;
    /* the host compiler opens what a source includes, as NVRTC would: a
     * unit (one from a kernel cache, say) gets the same check first */
    kf_strbuf inc = {0};
    bool allowed = kf_unit_source_check(units[i]->source, NULL, &inc);
    if (!allowed) {
      kf_diag_error(diag, "emulation: unit %s refused before compiling:\n%s",
                    units[i]->name ? units[i]->name : "?", inc.data ? inc.data : "");
      kf_strbuf_fini(&inc);
      st = KF_ERR_INVALID;
      goto done;
    }
    kf_strbuf_fini(&inc);
    bool seen = false;
    for (int k = 0; k < e->n_units && !seen; k++) seen = e->unit[k] == units[i];
    if (!seen) e->unit[e->n_units++] = units[i];
  }
  if (e->n_units == 0) goto done; /* library steps only: nothing to compile */
  if ((st = kf_templates_write(dir, diag))) goto done;
  int nb = plan_batches(e, batch), total = nb;
  for (int b = 0; b < nb && !st; b++) {
    int m = 0;
    for (int k = 0; k < e->n_units; k++)
      if (batch[k] == b) bu[m++] = e->unit[k];
    char cpp[4200];
    snprintf(cpp, sizeof cpp, "%s/emu%d.cpp", dir, b);
    st = write_batch(cpp, bu, m, diag);
  }
  if (!st) st = compile_batches(dir, 0, nb, ok, diag);
  /* a batch of several units that failed: one library a unit, so that the
   * unit at fault is named */
  for (int k = 0; k < e->n_units && !st; k++) {
    if (ok[batch[k]]) continue;
    int m = 0;
    for (int j = 0; j < e->n_units; j++) m += batch[j] == batch[k];
    if (m < 2) continue;
    char cpp[4200];
    snprintf(cpp, sizeof cpp, "%s/emu%d.cpp", dir, total);
    st = write_batch(cpp, &e->unit[k], 1, diag);
    batch[k] = total++;
  }
  if (!st && total > nb) st = compile_batches(dir, nb, total, ok, diag);
  for (int k = 0; k < e->n_units && !st; k++)
    if (!ok[batch[k]]) {
      char log[4200], line[600];
      snprintf(log, sizeof log, "%s/emu%d.log", dir, batch[k]);
      first_error(log, line, sizeof line);
      kf_diag_error(diag, "emulation: unit %s (%s) does not compile as host C++ over the CUDA emulation: %s",
                    e->unit[k]->name ? e->unit[k]->name : "?", e->unit[k]->policy ? e->unit[k]->policy : "?", line);
      st = KF_ERR_UNSUPPORTED;
    }
  for (int b = 0; b < total && !st; b++) {
    lib_at[b] = -1;
    bool used = false;
    for (int k = 0; k < e->n_units; k++) used |= batch[k] == b;
    if (!used) continue;
    char so[4200];
    snprintf(so, sizeof so, "%s/emu%d.so", dir, b);
    lib_at[b] = e->n_lib;
    st = load_lib(e, so, diag);
  }
  for (int k = 0; k < e->n_units && !st; k++) e->lib_of[k] = lib_at[batch[k]];
done:
  free(batch);
  free(lib_at);
  free(ok);
  free(bu);
  if (st) {
    kf_emu_destroy(e);
    return st;
  }
  *out = e;
  return KF_OK;
}

void kf_emu_destroy(kf_emu *e) {
  if (!e) return;
  for (int i = 0; i < e->n_lib; i++) dlclose(e->lib[i]);
  free(e->lib);
  free(e->launch);
  free(e->flag);
  free(e->unit);
  free(e->lib_of);
  free(e);
}

unsigned kf_emu_index_error(const kf_emu *e) {
  unsigned f = 0;
  for (int i = 0; e && i < e->n_lib; i++) f |= *e->flag[i];
  return f;
}

/* ---- running ---- */

kf_status kf_emu_run_unit(kf_emu *e, const kf_group *grp, const kf_unit *u, void *const *ptr, kf_diag *diag) {
  launch_fn launch = NULL;
  for (int k = 0; k < e->n_units; k++)
    if (e->unit[k] == u) launch = e->launch[e->lib_of[k]];
  void **scratch = calloc((size_t)u->n_scratch + 1, sizeof *scratch);
  if (!scratch) return KF_ERR_NOMEM;
  kf_status st = KF_OK;
  for (int s = 0; s < u->n_scratch && !st; s++) {
    scratch[s] = malloc(u->scratch_bytes[s] > 0 ? (size_t)u->scratch_bytes[s] : 1);
    if (!scratch[s]) st = KF_ERR_NOMEM;
    else memset(scratch[s], 0xff, u->scratch_bytes[s] > 0 ? (size_t)u->scratch_bytes[s] : 1); /* poison */
  }
  for (int s = 0; s < u->n_steps && !st; s++) {
    const kf_unit_step *sp = &u->steps[s];
    enum { MAXA = 64 };
    if (sp->n_args > MAXA) {
      kf_diag_error(diag, "emulation: unit %s step %d has %d arguments (at most %d)", u->name, s, sp->n_args, MAXA);
      st = KF_ERR_UNSUPPORTED;
      break;
    }
    void *args[MAXA] = {0};
    long long i64[MAXA];
    int i32[MAXA];
    float f32[MAXA];
    double f64[MAXA];
    for (int a = 0; a < sp->n_args; a++) {
      const kf_unit_arg *x = &sp->args[a];
      switch (x->kind) {
      case KF_UARG_INPUT: args[a] = (char *)ptr[grp->inputs[x->index]->id] + x->i; break;
      case KF_UARG_OUTPUT: args[a] = (char *)ptr[grp->outputs[x->index]->id] + x->i; break;
      case KF_UARG_SCRATCH: args[a] = (char *)scratch[x->index] + x->i; break;
      /* scalars by address, as cuLaunchKernel's kernelParams */
      case KF_UARG_I64: i64[a] = x->i; args[a] = &i64[a]; break;
      case KF_UARG_I32: i32[a] = (int)x->i; args[a] = &i32[a]; break;
      case KF_UARG_F32: f32[a] = (float)x->f; args[a] = &f32[a]; break;
      case KF_UARG_F64: f64[a] = x->f; args[a] = &f64[a]; break;
      default: args[a] = NULL; break;
      }
    }
    switch (sp->kind) {
    case KF_USTEP_LAUNCH: {
      int r = launch ? launch(sp->kernel, sp->grid[0], sp->grid[1], sp->grid[2], sp->block[0], sp->block[1],
                              sp->block[2], args, sp->n_args)
                     : -1;
      if (r) {
        kf_diag_error(diag, "emulation: unit %s: kernel %s %s", u->name, sp->kernel,
                      r < 0 ? "is not in the unit's source" : "has another parameter count than its step");
        st = KF_ERR_INVALID;
      }
      break;
    }
    case KF_USTEP_GEMM: {
      kf_dtype bdt = sp->gemm.dtype;
      if (sp->n_args > 4 && sp->args[4].kind == KF_UARG_INPUT) bdt = grp->inputs[sp->args[4].index]->type.dtype;
      st = cpu_gemm(&sp->gemm, args[0], args[1], sp->n_args > 2 ? args[2] : NULL, sp->n_args > 4 ? args[4] : NULL,
                    bdt, args[3]);
      break;
    }
    case KF_USTEP_CONV: st = cpu_conv(&sp->conv, args[0], args[1], args[3], args[4], args[2]); break;
    case KF_USTEP_COPY: memcpy(args[0], args[1], (size_t)sp->args[2].i); break;
    case KF_USTEP_MEMSET: memset(args[0], 0, (size_t)sp->args[1].i); break;
    default:
      kf_diag_error(diag, "emulation: unit %s step %d is of an unknown kind %d", u->name, s, (int)sp->kind);
      st = KF_ERR_INVALID;
    }
  }
  for (int s = 0; s < u->n_scratch; s++) free(scratch[s]);
  free(scratch);
  return st;
}
