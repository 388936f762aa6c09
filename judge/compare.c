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

bool kf_jcompare(const kf_jvalue *v, const void *got, const double *ref, kf_jtol tol, unsigned char poison,
                 kf_jcmp *c, char *why, size_t n) {
  memset(c, 0, sizeof *c);
  why[0] = '\0';
  const kf_type *t = &v->type;
  bool fl = kf_dtype_is_float(t->dtype);
  size_t es = kf_dtype_size(t->dtype);
  kf_tensor view = {t->dtype, 1, {v->bytes / (int64_t)es}, (void *)got};
  /* sums of squares scaled by the largest finite magnitude: no overflow */
  double big = 0, ss = 0, num = 0;
  int64_t nf = 0;
  for (int64_t i = 0; fl && i < v->numel; i++) {
    double r = in_range(ref[i], t->dtype);
    if (isfinite(r) && fabs(r) > big) big = fabs(r);
  }
  for (int64_t i = 0; fl && big > 0 && i < v->numel; i++) {
    double r = in_range(ref[i], t->dtype);
    if (isfinite(r)) {
      ss += (r / big) * (r / big);
      nf++;
    }
  }
  double rms = nf ? big * sqrt(ss / (double)nf) : 0;
  int64_t first = -1;
  double fg = 0, fr = 0;
  bool dense = kf_type_is_contiguous(t), f32 = t->dtype == KF_DTYPE_F32;
  for (int64_t i = 0; i < v->numel; i++) {
    int64_t off = dense ? i : kf_jelem_offset(t, i);
    double g = f32 ? (double)((const float *)got)[off] : kf_tensor_get(&view, off);
    double r = fl ? in_range(ref[i], t->dtype) : ref[i];
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
      if (big > 0) num += (d / big) * (d / big);
      if (d > c->max_abs) c->max_abs = d;
      ok = d <= tol.atol * rms + tol.rtol * fabs(r);
    }
    if (ok) continue;
    c->bad++;
    if (is_poison((const unsigned char *)got + off * (int64_t)es, es, poison)) c->unwritten++;
    if (first < 0) {
      first = i;
      fg = g;
      fr = r;
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
