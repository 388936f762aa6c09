/* judge/compare.c — a unit's outputs against the fp64 reference.
 *
 * Floating outputs: every element within atol * RMS(reference) + rtol *
 * |reference element|, and the relative error in norm within `norm`; NaN
 * only where the reference is NaN, an infinity only where it is the same
 * infinity. The absolute term scales with the output's RMS rather than
 * being a constant, so a sum whose terms cancel (a reference element near
 * 0 out of large addends) is held to the rounding its addends allow and a
 * tiny-valued output is not waved through by a constant. Integer and bool
 * outputs must be equal.
 *
 * Tolerances by precision policy (elements and the norm alike, but for
 * tf32; a group with a convolution under the default policy is judged as
 * tf32, as PyTorch's default lets cuDNN use TF32 there): default 1e-4,
 * tf32 5e-3 for elements and 2e-3 in norm, fp16 1e-2, bf16 2e-2; an f16
 * output at least 2e-3 and a bf16 one at least 1.6e-2 (four times their
 * unit roundoff, what storing an exact result costs). A unit computing an
 * fp32 policy's group in f16 or bf16 or with TF32 products misses the
 * default bound (relative errors of 3e-4 and more, measured in
 * tests/hacks). The norm bound is no tighter than the elements': a product
 * over many factors (prod reductions with inputs over six decades) carries
 * fp32 rounding of 6e-5 in norm, honestly (H100, 2026-11-25). The tf32
 * element bound is looser than its norm because a TF32 dot product's error
 * follows the sum of its terms' magnitudes, not its result: KernelBench L1
 * 50's cuDNN convolution on inputs over six decades had one element of 74M
 * 2% past 2e-3 x (RMS + |reference|) (H100, 2026-11-25). */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "judge_int.h"
#include "kfuse/interp.h"

kf_jtol kf_jtol_for(kf_precision p, kf_dtype dt) {
  double t = 1e-4, norm = 0;
  switch (p) {
  case KF_PRECISION_TF32: /* elements 5e-3: see above */
    t = 5e-3;
    norm = 2e-3;
    break;
  case KF_PRECISION_FP16: t = 1e-2; break;
  case KF_PRECISION_BF16: t = 2e-2; break;
  default: break;
  }
  if (dt == KF_DTYPE_F16 && t < 2e-3) t = 2e-3;
  if (dt == KF_DTYPE_BF16 && t < 1.6e-2) t = 1.6e-2;
  kf_jtol r = {t, t, norm > 0 ? norm : t};
  return r;
}

int64_t kf_jelem_offset(const kf_type *t, int64_t i) {
  int64_t off = 0;
  for (int d = t->rank - 1; d >= 0; d--) {
    int64_t s = t->shape[d];
    if (s <= 0) return 0;
    off += (i % s) * t->strides[d];
    i /= s;
  }
  return off;
}

static void index_str(const kf_type *t, int64_t i, char *b, size_t n) {
  int64_t idx[KF_MAX_RANK];
  for (int d = t->rank - 1; d >= 0; d--) {
    idx[d] = t->shape[d] > 0 ? i % t->shape[d] : 0;
    i = t->shape[d] > 0 ? i / t->shape[d] : 0;
  }
  size_t at = (size_t)snprintf(b, n, "[");
  for (int d = 0; d < t->rank && at < n; d++)
    at += (size_t)snprintf(b + at, n - at, "%s%lld", d ? ", " : "", (long long)idx[d]);
  if (at < n) snprintf(b + at, n - at, "]");
}

static bool is_poison(const unsigned char *p, size_t es, unsigned char poison) {
  for (size_t k = 0; k < es; k++)
    if (p[k] != poison) return false;
  return true;
}

/* The reference as the output's dtype holds it: a value past the dtype's
 * largest finite one (after rounding) is an infinity there, as PyTorch's
 * exp(100.0) in f32 is */
static double in_range(double r, kf_dtype dt) {
  double lim = dt == KF_DTYPE_F32 ? 3.4028235677973366e38 : dt == KF_DTYPE_F16 ? 65520.0
             : dt == KF_DTYPE_BF16 ? 3.3961775292304023e38 : INFINITY;
  return fabs(r) >= lim ? copysign(INFINITY, r) : r;
}

/* Large outputs are compared by several threads, each over its own part
 * (the worker compares every run's outputs: one thread took about 0.1 s
 * for a 16.7M-element output, 1.5 s of a candidate's 15 runs) */
#define CMP_PART ((int64_t)1 << 20)
#define CMP_THREADS 8

typedef struct cmp_part {
  const kf_jvalue *v;
  const void *got;
  const double *ref;
  kf_jtol tol;
  unsigned char poison;
  int64_t lo, hi;
  int phase; /* 1: the reference's scale and sum of squares; 2: the errors */
  double rms, big;
  /* phase 1 */
  double scale, sum; /* sum of (r / scale)^2 over finite r */
  int64_t nf;
  /* phase 2 */
  double num, max_abs, fg, fr;
  int64_t bad, unwritten, first;
} cmp_part;

static void *cmp_part_main(void *arg) {
  cmp_part *j = arg;
  const kf_type *t = &j->v->type;
  bool fl = kf_dtype_is_float(t->dtype);
  size_t es = kf_dtype_size(t->dtype);
  if (j->phase == 1) {
    for (int64_t i = j->lo; fl && i < j->hi; i++) {
      double r = in_range(j->ref[i], t->dtype);
      if (!isfinite(r)) continue;
      j->nf++;
      double a = fabs(r);
      if (a > j->scale) {
        j->sum = j->sum * (j->scale / a) * (j->scale / a) + 1;
        j->scale = a;
      } else if (a > 0) {
        j->sum += (a / j->scale) * (a / j->scale);
      }
    }
    return NULL;
  }
  kf_tensor view = {t->dtype, 1, {j->v->bytes / (int64_t)es}, (void *)j->got};
  bool dense = kf_type_is_contiguous(t), f32 = t->dtype == KF_DTYPE_F32;
  const double big = j->big, lim = j->tol.atol * j->rms;
  j->first = -1;
  for (int64_t i = j->lo; i < j->hi; i++) {
    int64_t off = dense ? i : kf_jelem_offset(t, i);
    double g = f32 ? (double)((const float *)j->got)[off] : kf_tensor_get(&view, off);
    double r = fl ? in_range(j->ref[i], t->dtype) : j->ref[i];
    bool ok;
    if (!fl) {
      ok = g == r;
    } else if (isnan(r)) {
      ok = isnan(g);
    } else if (isinf(r)) {
      ok = g == r;
    } else if (!isfinite(g)) {
      ok = false;
    } else {
      double d = fabs(g - r);
      if (big > 0) j->num += (d / big) * (d / big);
      if (d > j->max_abs) j->max_abs = d;
      ok = d <= lim + j->tol.rtol * fabs(r);
    }
    if (ok) continue;
    j->bad++;
    if (is_poison((const unsigned char *)j->got + off * (int64_t)es, es, j->poison)) j->unwritten++;
    if (j->first < 0) {
      j->first = i;
      j->fg = g;
      j->fr = r;
    }
  }
  return NULL;
}

/* Each part's phase, on threads where the output is large enough */
static void cmp_run(cmp_part *p, int np, int phase) {
  pthread_t th[CMP_THREADS];
  bool started[CMP_THREADS] = {false};
  for (int q = 0; q < np; q++) p[q].phase = phase;
  for (int q = 1; q < np; q++) started[q] = pthread_create(&th[q], NULL, cmp_part_main, &p[q]) == 0;
  cmp_part_main(&p[0]);
  for (int q = 1; q < np; q++) {
    if (started[q]) pthread_join(th[q], NULL);
    else cmp_part_main(&p[q]); /* no thread for it: here */
  }
}

bool kf_jcompare(const kf_jvalue *v, const void *got, const double *ref, kf_jtol tol, unsigned char poison,
                 kf_jcmp *c, char *why, size_t n) {
  memset(c, 0, sizeof *c);
  why[0] = '\0';
  const kf_type *t = &v->type;
  bool fl = kf_dtype_is_float(t->dtype);
  int np = (int)(v->numel / CMP_PART);
  np = np < 1 ? 1 : np > CMP_THREADS ? CMP_THREADS : np;
  cmp_part p[CMP_THREADS];
  for (int q = 0; q < np; q++)
    p[q] = (cmp_part){.v = v, .got = got, .ref = ref, .tol = tol, .poison = poison,
                      .lo = v->numel * q / np, .hi = v->numel * (q + 1) / np};
  /* the reference's largest finite magnitude and its RMS, as sums of
   * squares scaled by the largest magnitude (no overflow) */
  cmp_run(p, np, 1);
  double big = 0, ss = 0;
  int64_t nf = 0;
  for (int q = 0; q < np; q++) big = p[q].scale > big ? p[q].scale : big;
  for (int q = 0; q < np; q++) {
    if (p[q].scale > 0) ss += p[q].sum * (p[q].scale / big) * (p[q].scale / big);
    nf += p[q].nf;
  }
  if (!fl || big <= 0) ss = 0;
  double rms = nf && big > 0 ? big * sqrt(ss / (double)nf) : 0;
  for (int q = 0; q < np; q++) {
    p[q].big = big;
    p[q].rms = rms;
  }
  cmp_run(p, np, 2);
  double num = 0, fg = 0, fr = 0;
  int64_t first = -1;
  for (int q = 0; q < np; q++) {
    num += p[q].num;
    if (p[q].max_abs > c->max_abs) c->max_abs = p[q].max_abs;
    c->bad += p[q].bad;
    c->unwritten += p[q].unwritten;
    if (first < 0 && p[q].first >= 0) {
      first = p[q].first;
      fg = p[q].fg;
      fr = p[q].fr;
    }
  }
  c->rel_norm = ss > 0 ? sqrt(num / ss) : big > 0 ? sqrt(num) : 0;
  if (c->bad) {
    char at[128], unw[96] = "";
    index_str(t, first, at, sizeof at);
    if (c->unwritten)
      snprintf(unw, sizeof unw, " (%lld of them never written: they hold the poison)", (long long)c->unwritten);
    snprintf(why, n,
             "output '%s': %lld of %lld elements out of tolerance%s; the first at %s is %.9g, the reference "
             "%.9g (tolerance %.3g x RMS %.3g + %.3g x |reference|)",
             v->name, (long long)c->bad, (long long)v->numel, unw, at, fg, fr, tol.atol, rms, tol.rtol);
    return false;
  }
  if (fl && c->rel_norm > tol.norm) {
    snprintf(why, n, "output '%s': relative error in norm %.3g, over the policy's %.3g", v->name, c->rel_norm,
             tol.norm);
    return false;
  }
  return true;
}
