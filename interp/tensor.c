/* interp/tensor.c — host tensors: allocation, element access with
 * PyTorch-like dtype conversion, and element-wise comparison against a
 * reference (what `kfuse run` and the tests use to judge results).
 *
 * Conversions are written out in double precision: f16 and bf16 are
 * rounded directly from the double (one rounding, to nearest even), so a
 * value already representable in the narrow format round-trips exactly. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp_int.h"

/* ---- 16-bit floats ------------------------------------------------------- */

/* Round a finite a >= 0 to a binary format with `mant` fraction bits,
 * smallest normal exponent emin and largest finite value maxf, to nearest
 * even; INFINITY when it rounds past maxf. */
static double round_format(double a, int mant, int emin, double maxf) {
  if (a == 0) return 0;
  int e;
  frexp(a, &e); /* a in [2^(e-1), 2^e) */
  int E = e - 1 < emin ? emin : e - 1;
  double q = ldexp(1.0, E - mant); /* spacing of the format around a */
  double r = nearbyint(a / q) * q;
  return r > maxf ? INFINITY : r;
}

/* Encode a value already representable in the format (or inf/nan). */
static uint16_t encode16(double v, int mant, int emin, int bias,
                         uint16_t nan_bits) {
  uint16_t sign = signbit(v) ? 0x8000 : 0;
  uint16_t exp_all = (uint16_t)(((1u << (15 - mant)) - 1) << mant);
  if (isnan(v)) return sign | nan_bits;
  double a = fabs(v);
  if (isinf(a)) return sign | exp_all;
  if (a == 0) return sign;
  if (a < ldexp(1.0, emin)) /* subnormal: exponent field 0 */
    return sign | (uint16_t)ldexp(a, mant - emin);
  int e;
  double m = frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
  int E = e - 1;
  uint16_t frac = (uint16_t)(ldexp(m, mant + 1) - ldexp(1.0, mant));
  return sign | (uint16_t)((E + bias) << mant) | frac;
}

static double decode16(uint16_t h, int mant, int emin, int bias) {
  double sign = (h & 0x8000) ? -1.0 : 1.0;
  int ebits = 15 - mant;
  unsigned exp = (h >> mant) & ((1u << ebits) - 1);
  unsigned frac = h & ((1u << mant) - 1);
  if (exp == (1u << ebits) - 1) return frac ? NAN : sign * INFINITY;
  if (exp == 0) return sign * ldexp((double)frac, emin - mant);
  return sign * ldexp((double)(frac | (1u << mant)), (int)exp - bias - mant);
}

#define F16_MAX 65504.0
#define BF16_MAX (0x1.fep127)

static double round_f16(double v) {
  if (isnan(v) || isinf(v)) return v;
  return copysign(round_format(fabs(v), 10, -14, F16_MAX), v);
}

static double round_bf16(double v) {
  if (isnan(v) || isinf(v)) return v;
  return copysign(round_format(fabs(v), 7, -126, BF16_MAX), v);
}

/* ---- conversions --------------------------------------------------------- */

/* float -> integer as x86 PyTorch does: truncate; NaN and values outside
 * int64 give INT64_MIN (what cvttsd2si yields). */
static int64_t to_i64(double v) {
  if (isnan(v)) return INT64_MIN;
  v = trunc(v);
  if (v >= 0x1p63 || v < -0x1p63) return INT64_MIN;
  return (int64_t)v;
}

double ki_round_to(kf_dtype t, double v) {
  switch (t) {
  case KF_DTYPE_F64: return v;
  case KF_DTYPE_F32: return (double)(float)v;
  case KF_DTYPE_F16: return round_f16(v);
  case KF_DTYPE_BF16: return round_bf16(v);
  case KF_DTYPE_I64: return (double)to_i64(v);
  case KF_DTYPE_I32: return (double)(int32_t)(uint32_t)(uint64_t)to_i64(v);
  case KF_DTYPE_I16: return (double)(int16_t)(uint16_t)(uint64_t)to_i64(v);
  case KF_DTYPE_I8: return (double)(int8_t)(uint8_t)(uint64_t)to_i64(v);
  case KF_DTYPE_U8: return (double)(uint8_t)(uint64_t)to_i64(v);
  case KF_DTYPE_BOOL: return v != 0 ? 1.0 : 0.0;
  default: break;
  }
  KF_ASSERT(!"ki_round_to: invalid dtype");
  return 0;
}

double ki_load(kf_dtype t, const void *data, int64_t i) {
  const unsigned char *p = (const unsigned char *)data + (size_t)i * kf_dtype_size(t);
  switch (t) {
  case KF_DTYPE_F64: { double x; memcpy(&x, p, 8); return x; }
  case KF_DTYPE_F32: { float x; memcpy(&x, p, 4); return x; }
  case KF_DTYPE_F16: { uint16_t x; memcpy(&x, p, 2); return decode16(x, 10, -14, 15); }
  case KF_DTYPE_BF16: { uint16_t x; memcpy(&x, p, 2); return decode16(x, 7, -126, 127); }
  case KF_DTYPE_I64: { int64_t x; memcpy(&x, p, 8); return (double)x; }
  case KF_DTYPE_I32: { int32_t x; memcpy(&x, p, 4); return x; }
  case KF_DTYPE_I16: { int16_t x; memcpy(&x, p, 2); return x; }
  case KF_DTYPE_I8: return (int8_t)p[0];
  case KF_DTYPE_U8: return p[0];
  case KF_DTYPE_BOOL: return p[0] != 0;
  default: break;
  }
  KF_ASSERT(!"ki_load: invalid dtype");
  return 0;
}

/* ---- tensors ------------------------------------------------------------- */

int64_t kf_tensor_numel(const kf_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->shape[i];
  return n;
}

kf_status kf_tensor_alloc(kf_tensor *t) {
  t->data = NULL;
  size_t es = kf_dtype_size(t->dtype);
  if (es == 0 || t->rank < 0 || t->rank > KF_MAX_RANK) return KF_ERR_ARG;
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] < 0) return KF_ERR_ARG;
    if (t->shape[i] && n > INT64_MAX / 16 / t->shape[i]) return KF_ERR_LIMIT;
    n *= t->shape[i];
  }
  if ((uint64_t)n > SIZE_MAX / es) return KF_ERR_LIMIT;
  t->data = calloc(n ? (size_t)n : 1, es);
  return t->data ? KF_OK : KF_ERR_NOMEM;
}

void kf_tensor_fini(kf_tensor *t) {
  if (!t) return;
  free(t->data);
  t->data = NULL;
}

double kf_tensor_get(const kf_tensor *t, int64_t i) {
  return ki_load(t->dtype, t->data, i);
}

void kf_tensor_set(kf_tensor *t, int64_t i, double v) { kf_elem_set(t->dtype, t->data, i, v); }

double kf_elem_get(kf_dtype dt, const void *data, int64_t i) { return ki_load(dt, data, i); }

void kf_elem_set(kf_dtype dt, void *data, int64_t i, double v) {
  unsigned char *p = (unsigned char *)data + (size_t)i * kf_dtype_size(dt);
  double r = ki_round_to(dt, v);
  switch (dt) {
  case KF_DTYPE_F64: memcpy(p, &r, 8); return;
  case KF_DTYPE_F32: { float x = (float)r; memcpy(p, &x, 4); return; }
  case KF_DTYPE_F16: { uint16_t x = encode16(r, 10, -14, 15, 0x7e00); memcpy(p, &x, 2); return; }
  case KF_DTYPE_BF16: { uint16_t x = encode16(r, 7, -126, 127, 0x7fc0); memcpy(p, &x, 2); return; }
  case KF_DTYPE_I64: { int64_t x = to_i64(v); memcpy(p, &x, 8); return; }
  case KF_DTYPE_I32: { int32_t x = (int32_t)r; memcpy(p, &x, 4); return; }
  case KF_DTYPE_I16: { int16_t x = (int16_t)r; memcpy(p, &x, 2); return; }
  case KF_DTYPE_I8: p[0] = (unsigned char)(int8_t)r; return;
  case KF_DTYPE_U8: p[0] = (unsigned char)r; return;
  case KF_DTYPE_BOOL: p[0] = r != 0; return;
  default: break;
  }
  KF_ASSERT(!"kf_tensor_set: invalid dtype");
}

/* ---- comparison ---------------------------------------------------------- */

static void shape_str(int rank, const int64_t *shape, char *buf, size_t n) {
  size_t k = 0;
  k += (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < rank && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%" PRId64, i ? ", " : "", shape[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
}

kf_status kf_tensor_compare(const kf_tensor *got, const kf_tensor *want,
                            double atol, double rtol, const char *what,
                            kf_diag *diag) {
  if (!what) what = "tensor";
  if (kf_dtype_size(got->dtype) == 0 || kf_dtype_size(want->dtype) == 0 ||
      got->rank < 0 || got->rank > KF_MAX_RANK || want->rank < 0 || want->rank > KF_MAX_RANK) {
    kf_diag_error(diag, "%s: invalid tensor (dtype or rank)", what);
    return KF_ERR_ARG;
  }
  bool same = got->rank == want->rank;
  for (int i = 0; same && i < got->rank; i++) same = got->shape[i] == want->shape[i];
  if (!same) {
    char a[160], b[160];
    shape_str(got->rank, got->shape, a, sizeof a);
    shape_str(want->rank, want->shape, b, sizeof b);
    kf_diag_error(diag, "%s: shape %s, expected %s", what, a, b);
    return KF_ERR_MISMATCH;
  }
  int64_t n = kf_tensor_numel(want), bad = 0, worst = -1;
  double worst_excess = -1;
  for (int64_t i = 0; i < n; i++) {
    double g = kf_tensor_get(got, i), w = kf_tensor_get(want, i);
    double excess;
    if (isnan(w) || isnan(g)) {
      excess = isnan(w) && isnan(g) ? 0 : INFINITY;
    } else if (isinf(w) || isinf(g)) {
      excess = g == w ? 0 : INFINITY;
    } else {
      double d = fabs(g - w), tol = atol + rtol * fabs(w);
      excess = d <= tol ? 0 : d - tol;
    }
    if (excess > 0) {
      bad++;
      if (excess > worst_excess) {
        worst_excess = excess;
        worst = i;
      }
    }
  }
  if (bad == 0) return KF_OK;
  int64_t idx[KF_MAX_RANK], rem = worst;
  for (int k = want->rank - 1; k >= 0; k--) {
    idx[k] = want->shape[k] ? rem % want->shape[k] : 0;
    rem = want->shape[k] ? rem / want->shape[k] : 0;
  }
  char at[160];
  shape_str(want->rank, idx, at, sizeof at);
  kf_diag_error(diag,
                "%s: %" PRId64 " of %" PRId64 " elements differ (atol %g, rtol %g); "
                "worst at %s: got %.9g, want %.9g",
                what, bad, n, atol, rtol, at, kf_tensor_get(got, worst),
                kf_tensor_get(want, worst));
  return KF_ERR_MISMATCH;
}
